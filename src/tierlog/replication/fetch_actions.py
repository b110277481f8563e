"""What the replica fetcher core asks its shell to do, in order.

Each action names a partition by ``PartitionKey`` = (topic id, partition).
The shell applies them in the order returned, before building the next
Fetch for the same leader (the fetch offset is read back from the log).

- ``Append``: append ``records`` (whole batches, leader-stamped) as follower.
- ``TruncateTo``: drop the log from ``offset`` (exclusive end kept); also
  truncates the leader-epoch cache (leader-epoch-checkpoint).
- ``TruncateFullyAndStartAt``: empty the log and restart it at ``offset``.
- ``UpdateHighWatermark``: set the follower's high watermark to
  min(``high_watermark``, its log end offset) and raise its log start offset to
  ``leader_log_start_offset`` when that is higher (Kafka's follower rule).
- ``Backoff``: informational; the partition is not fetched before ``until_ms``.
- ``ListLeaderOffset``: the leader answered OFFSET_OUT_OF_RANGE; ask it with
  ListOffsets, as replica ``ReplicaId`` at ``leader_epoch``, for ``timestamp``
  (LATEST = its log end offset, then maybe EARLIEST = its log start offset) and
  hand the answer to ``FetcherState.on_leader_offset``.  Not fetched until then.
- ``AwaitMetadata``: the leader fenced our epoch; the partition is not fetched
  until ``become_follower`` brings a newer leader epoch.
- ``BuildRemoteLogAuxState``: rebuild the log from remote storage (KIP-405 at
  the leader's local log start; KIP-1023 at a given offset) and report to
  ``FetcherState.on_remote_aux_state``.
- ``ProbeTieredStart`` (KIP-1023): ask the leader, as a replica, for its log
  end (-1), log start (-2), local log start (-4) and earliest pending upload
  offset (-6) and hand the answers to ``FetcherState.on_tiered_start``.  Not
  fetched until then.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "EARLIEST",
    "LATEST",
    "Append",
    "AwaitMetadata",
    "Backoff",
    "BuildRemoteLogAuxState",
    "FetchAction",
    "ListLeaderOffset",
    "PartitionKey",
    "ProbeTieredStart",
    "TruncateFullyAndStartAt",
    "TruncateTo",
    "UpdateHighWatermark",
]

PartitionKey = tuple[bytes, int]
LATEST, EARLIEST = -1, -2          # ListOffsets targets: log end offset (asked as a replica), log start


@dataclass(frozen=True, slots=True)
class Append:
    key: PartitionKey
    records: Any                    # bytes / memoryview of record batches (opaque here)


@dataclass(frozen=True, slots=True)
class TruncateTo:
    key: PartitionKey
    offset: int                     # new log end offset (exclusive)


@dataclass(frozen=True, slots=True)
class TruncateFullyAndStartAt:
    key: PartitionKey
    offset: int


@dataclass(frozen=True, slots=True)
class UpdateHighWatermark:
    key: PartitionKey
    high_watermark: int
    leader_log_start_offset: int


@dataclass(frozen=True, slots=True)
class Backoff:
    key: PartitionKey
    until_ms: int
    error: int


@dataclass(frozen=True, slots=True)
class ListLeaderOffset:
    key: PartitionKey
    leader_epoch: int               # CurrentLeaderEpoch of the ListOffsets request
    timestamp: int                  # LATEST or EARLIEST


@dataclass(frozen=True, slots=True)
class AwaitMetadata:
    key: PartitionKey
    leader_epoch: int
    error: int


@dataclass(frozen=True, slots=True)
class BuildRemoteLogAuxState:
    """KIP-405: the leader moved our fetch offset to tiered storage; rebuild the log's
    epochs and producer state from remote storage and start at the leader's local log start.

    KIP-1023 gives ``start_offset`` T and ``log_start_offset`` S: the state comes from the
    remote segment holding T - 1, then log start = S and log end = T (-1: KIP-405's, asked
    of the leader)."""
    key: PartitionKey
    leader_epoch: int
    start_offset: int = -1
    log_start_offset: int = -1


@dataclass(frozen=True, slots=True)
class ProbeTieredStart:
    """KIP-1023: an empty replica of a tiered topic asks the leader's offsets before fetching."""
    key: PartitionKey
    leader_epoch: int


FetchAction = (Append | TruncateTo | TruncateFullyAndStartAt | UpdateHighWatermark | Backoff
               | ListLeaderOffset | AwaitMetadata | BuildRemoteLogAuxState | ProbeTieredStart)
