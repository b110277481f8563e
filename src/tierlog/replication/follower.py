"""One partition followed from one leader: its fetch state machine (Kafka's PartitionFetchState).

The follower's log is read (never written) through ``FollowerLog``; every
write goes back to the shell as an action (``fetch_actions``).  The fetch
offset is the log end offset at request time and LastFetchedEpoch the log's
latest epoch, so applying an Append or a truncation needs no confirmation.

States and transitions (FETCHING: in the fetch session with the leader, so
every request covers it, unless delayed by a backoff):

    FETCHING      -data / DivergingEpoch->         FETCHING
    FETCHING      -retriable error, lost request-> FETCHING, delayed by backoff
    FETCHING      -OFFSET_OUT_OF_RANGE->           OUT_OF_RANGE
    OUT_OF_RANGE  -leader offset resolves it->     FETCHING (maybe truncated)
    OUT_OF_RANGE  -ListOffsets error->             FETCHING, delayed by backoff
    OUT_OF_RANGE  -ListOffsets FENCED_LEADER_EPOCH-> FENCED
    FETCHING      -FENCED_LEADER_EPOCH->           FENCED
    FETCHING      -OFFSET_MOVED_TO_TIERED_STORAGE-> TIERED (KIP-405 rebuild), or PROBING (KIP-1023)
    TIERED        -rebuilt / failed (backoff)->    FETCHING
    TIERED        -FENCED_LEADER_EPOCH->           FENCED
    FETCHING      -KIP-1023 probe due->            PROBING
    FETCHING      -OFFSET_OUT_OF_RANGE, KIP-1023 applies-> PROBING
    PROBING       -usual / start at T->            FETCHING (maybe restarted at T)
    PROBING       -usual after OFFSET_OUT_OF_RANGE-> OUT_OF_RANGE (Kafka's resolution)
    PROBING       -usual after OFFSET_MOVED_TO_TIERED_STORAGE-> TIERED (KIP-405's rebuild)
    PROBING       -rebuild at T->                  TIERED
    PROBING       -retry, ListOffsets error->      FETCHING, delayed by backoff (probes again)
    PROBING       -FENCED_LEADER_EPOCH->           FENCED
    any           -new leader epoch (metadata)->   FETCHING (a late response is ignored)

A KIP-1023 probe is due when ``tiered_start.should_probe`` holds and the
partition has not been probed at this leader epoch (``probed``); a rebuild
that failed clears ``probed``, so the partition probes again after its backoff.

Backoff after errors is exponential from replica.fetch.backoff.ms up to
``FETCH_BACKOFF_MAX_MS`` (Kafka waits a fixed replica.fetch.backoff.ms); a
successful response resets it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from .fetch_actions import PartitionKey
from .follower_session import FetchFields
from .tiered_start import NOT_TIERED, TopicTiering

__all__ = ["FETCH_BACKOFF_MAX_MS", "FetchStatus", "FollowerLog", "FollowerLogReads", "PartitionFetchState"]

FETCH_BACKOFF_MAX_MS = 30_000


class FollowerLog(Protocol):
    """Read-only view of the follower's local log the fetcher needs."""

    @property
    def log_end_offset(self) -> int: ...            # exclusive
    @property
    def log_start_offset(self) -> int: ...
    @property
    def latest_epoch(self) -> int | None: ...
    @property
    def local_log_start_timestamp(self) -> int: ...  # KIP-1303, -1 unknown
    @property
    def local_log_size_bytes(self) -> int: ...       # KIP-1303, -1 unknown
    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]: ...
    def fetch_position(self) -> tuple[int, int | None, int, int, int]: ...   # the five above, read at once


class FollowerLogReads:
    """``FollowerLog.fetch_position`` from the five properties (a log with no faster way)."""

    def fetch_position(self) -> tuple[int, int | None, int, int, int]:
        log: FollowerLog = self      # type: ignore[assignment]
        return (log.log_end_offset, log.latest_epoch, log.log_start_offset, log.local_log_start_timestamp,
                log.local_log_size_bytes)


class FetchStatus(Enum):
    FETCHING = "fetching"
    OUT_OF_RANGE = "out_of_range"
    TIERED = "tiered"                   # rebuilding from remote storage (KIP-405 / KIP-1023)
    PROBING = "probing"                 # asking the leader where to start (KIP-1023)
    FENCED = "fenced"


_LEGAL = {
    FetchStatus.FETCHING: {FetchStatus.FETCHING, FetchStatus.OUT_OF_RANGE, FetchStatus.TIERED, FetchStatus.FENCED,
                           FetchStatus.PROBING},
    FetchStatus.OUT_OF_RANGE: {FetchStatus.FETCHING, FetchStatus.FENCED},
    FetchStatus.PROBING: {FetchStatus.FETCHING, FetchStatus.TIERED, FetchStatus.FENCED, FetchStatus.OUT_OF_RANGE},
    FetchStatus.TIERED: {FetchStatus.FETCHING, FetchStatus.FENCED},
    FetchStatus.FENCED: {FetchStatus.FETCHING},
}


@dataclass(slots=True)
class PartitionFetchState:
    key: PartitionKey
    log: FollowerLog
    leader_id: int
    leader_epoch: int                       # our CurrentLeaderEpoch
    status: FetchStatus = FetchStatus.FETCHING
    delay_until_ms: int = 0
    errors: int = 0                         # consecutive errors, for the backoff
    tiering: TopicTiering = NOT_TIERED  # the topic's traits (``enabled`` is the fetcher's)
    probed: bool = False                    # KIP-1023: the leader was asked at this epoch
    probe_trigger: int = 0                  # the fetch error that started the probe (0: before a fetch)

    def move(self, status: FetchStatus) -> None:
        assert status in _LEGAL[self.status], f"{self.key}: {self.status} -> {status}"
        self.status = status

    def ready(self, now_ms: int) -> bool:
        return self.status is FetchStatus.FETCHING and now_ms >= self.delay_until_ms

    def fields(self, partition_max_bytes: int) -> FetchFields:
        """What this partition's entry of the next Fetch says (the log as it is now)."""
        end, epoch, start, local_start_timestamp, local_size = self.log.fetch_position()
        return FetchFields(self.leader_epoch, end, -1 if epoch is None else epoch, start, partition_max_bytes,
                           local_start_timestamp, local_size)
