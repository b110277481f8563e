"""Small value types shared by the Raft modules: ids, batches, error codes, config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from tierlog.protocol.errors import ErrorCode
from tierlog.records.header import HEADER_SIZE

__all__ = [
    "Err", "LeaderAndEpoch", "LogBatch", "NotLeaderError", "OffsetAndEpoch", "QuorumInfo", "RaftConfig",
    "ReplicaInfo",
]


class OffsetAndEpoch(NamedTuple):
    """An offset with the epoch of the record before it.

    As a snapshot id, ``offset`` is the snapshot's end offset (exclusive) and ``epoch``
    the epoch of the record at ``offset - 1``. Ordering is by epoch, then offset, which
    is how Raft compares how up to date two logs are.
    """

    offset: int
    epoch: int

    def key(self) -> tuple[int, int]:
        return (self.epoch, self.offset)


class LeaderAndEpoch(NamedTuple):
    leader_id: int | None
    epoch: int


@dataclass(frozen=True, slots=True)
class LogBatch:
    """One batch of the replicated log as the core sees it (framing stays in the stores).

    ``records`` are record values; a control batch (``control=True``) carries the
    raw control record values and is never given to the state machine as data. Every
    record of a control batch has the control type ``control_type`` (2 LeaderChange,
    5 KRaftVersion, 6 Voters; the key is rebuilt from it on encoding).
    """

    base_offset: int
    epoch: int
    append_timestamp: int
    records: tuple[bytes, ...]
    control: bool = False
    control_type: int = 2

    @property
    def last_offset(self) -> int:  # inclusive
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:  # exclusive
        return self.base_offset + len(self.records)

    def size_estimate(self) -> int:
        """Bytes of the v2 encoding, close enough for fetch limits (a header and ~8 bytes a record)."""
        return HEADER_SIZE + sum(len(r) + 8 for r in self.records)

    def rebased(self, base_offset: int) -> LogBatch:
        return LogBatch(base_offset, self.epoch, self.append_timestamp, self.records, self.control, self.control_type)


#: Kafka's error codes as the quorum code names them (the enum itself, no second table)
Err = ErrorCode


class NotLeaderError(Exception):
    """propose() on a node that is not the leader (or is resigning)."""

    def __init__(self, leader: LeaderAndEpoch):
        super().__init__(f"not the leader; current leader {leader.leader_id} in epoch {leader.epoch}")
        self.leader = leader


@dataclass(frozen=True)
class RaftConfig:
    """Quorum settings; attribute names follow Kafka's config keys.

    election_timeout_ms      controller.quorum.election.timeout.ms
    election_backoff_max_ms  controller.quorum.election.backoff.max.ms
    fetch_timeout_ms         controller.quorum.fetch.timeout.ms
    request_timeout_ms       controller.quorum.request.timeout.ms
    retry_backoff_ms         controller.quorum.retry.backoff.ms
    append_linger_ms         controller.quorum.append.linger.ms
    max_replication_lag_ms   KIP-630 max.replication.lag.ms (LBO advance)
    """

    cluster_id: str = ""
    election_timeout_ms: int = 1000
    election_backoff_max_ms: int = 1000
    fetch_timeout_ms: int = 2000
    fetch_max_wait_ms: int = 500
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    append_linger_ms: int = 25
    max_replication_lag_ms: int = 30_000
    fetch_max_bytes: int = 8 * 1024 * 1024
    snapshot_chunk_bytes: int = 1024 * 1024
    max_batch_records: int = 1000
    max_batch_bytes: int = 1024 * 1024

    @property
    def check_quorum_timeout_ms(self) -> int:
        """A leader resigns when a majority has not fetched for this long (1.5x fetch timeout)."""
        return self.fetch_timeout_ms * 3 // 2


@dataclass(frozen=True)
class ReplicaInfo:
    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int
    directory_id: bytes = bytes(16)   # a voter's directory id (KIP-853); zero when unknown


@dataclass(frozen=True)
class QuorumInfo:
    """DescribeQuorum's partition answer. ``error`` is NOT_LEADER_OR_FOLLOWER (6) on a
    non-leader, whose lists are then empty."""

    error: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[ReplicaInfo]
    observers: list[ReplicaInfo]
    #: DescribeQuorum v2 Nodes: each voter's (listener name, host, port) endpoints
    nodes: dict[int, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)
