"""ListOffsets on a partition (Kafka's ``Partition.fetchOffsetForTimestamp``), through its public
views only.

Targets: -1 latest (``max_offset`` of the reader's isolation: the high watermark,
the last stable offset for read_committed, the log end for replicas), -2
earliest, -3 max timestamp, -4 earliest local, -5 latest tiered, -6 earliest
pending upload (-2/-4/-5/-6 by ``tiered.read_rules``), else a timestamp.  A
consumer never gets an offset at or past its last fetchable one: such a lookup
answers -1, or OFFSET_NOT_AVAILABLE (retriable), as latest does, while a new
leader's high watermark has not reached the start of its epoch yet.
"""
from __future__ import annotations

from tierlog.protocol.errors import ErrorCode
from tierlog.tiered.read_rules import list_offsets_answer

from .outcomes import FetchIsolation
from .partition import Partition

__all__ = ["EARLIEST", "EARLIEST_LOCAL", "EARLIEST_PENDING_UPLOAD", "LATEST", "LATEST_TIERED", "MAX_TIMESTAMP",
           "fetch_offset_for_timestamp"]

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
Found = tuple[int, int, int]          # (offset, timestamp, leader epoch)


def fetch_offset_for_timestamp(part: Partition, target: int, isolation: FetchIsolation,
                               remote: Found | None = None) -> tuple[int, Found | None]:
    """(error, found) for ``target``; ``remote``: what remote storage answered for a timestamp
    below the local log start (it wins over the local lookup)."""
    return _fetchable(part, isolation, target, remote or _lookup(part, target, isolation))


def _lookup(part: Partition, target: int, isolation: FetchIsolation) -> Found | None:
    if target == LATEST:
        return part.max_offset(isolation), -1, part.latest_epoch
    if target in (EARLIEST, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        answer = list_offsets_answer(part.tiered_state(with_epochs=True), target)
        return answer.offset, -1, answer.leader_epoch
    if target == MAX_TIMESTAMP:
        return part.max_timestamp_offset()
    if target < 0:
        return None
    return part.offset_for_timestamp(target)


def _fetchable(part: Partition, isolation: FetchIsolation, target: int, found: Found | None):
    """(error, found) as a consumer may see it (Kafka's Partition.fetchOffsetForTimestamp and
    ReplicaManager.fetchOffset).  Earliest targets and replicas' requests are not capped."""
    if isolation is FetchIsolation.LOG_END or target in (EARLIEST, EARLIEST_LOCAL):
        return ErrorCode.NONE, found
    lagging = part.leader_behind_epoch_start
    if target == LATEST:
        return (ErrorCode.OFFSET_NOT_AVAILABLE, None) if lagging else (ErrorCode.NONE, found)
    if found is not None and found[0] < part.max_offset(isolation):
        return ErrorCode.NONE, found            # offset -1 answers (nothing tiered yet) included
    return (ErrorCode.OFFSET_NOT_AVAILABLE if lagging else ErrorCode.NONE), None
