"""What the state machine receives from the node."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tierlog.raft.snapshots import SnapshotReader
from tierlog.raft.types import LeaderAndEpoch

__all__ = ["CommittedBatch", "QuorumInfo", "RaftListener", "ReplicaInfo"]


@dataclass(frozen=True)
class CommittedBatch:
    """One committed batch. ``records`` are the upper layer's record values; a control
    batch (``control=True``, e.g. the LeaderChange record a new leader writes) has no
    records and its raw values in ``control_records``. Offsets are inclusive."""

    base_offset: int
    last_offset: int
    epoch: int
    append_timestamp: int
    records: list[bytes]
    control: bool = False
    control_records: list[bytes] = field(default_factory=list)


class RaftListener(Protocol):
    def handle_commit(self, batch: CommittedBatch) -> None: ...

    def handle_load_snapshot(self, reader: SnapshotReader) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


@dataclass(frozen=True)
class ReplicaInfo:
    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


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
