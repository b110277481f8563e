"""Fetch validation at the leader and truncation at the follower (KIP-595, KIP-630)."""

from __future__ import annotations

from tierlog.raft.log import ReplicatedLog
from tierlog.raft.types import OffsetAndEpoch

__all__ = ["DIVERGING", "SNAPSHOT", "VALID", "truncation_offset", "validate_fetch"]

VALID = "valid"
DIVERGING = "diverging"
SNAPSHOT = "snapshot"


def validate_fetch(log: ReplicatedLog, fetch_offset: int, last_fetched_epoch: int) -> tuple[str, OffsetAndEpoch | None]:
    """Classify a follower's (fetch offset, last fetched epoch) against the leader's log.

    SNAPSHOT: the position is below the log begin offset (or at it with another epoch,
    or its epoch predates the snapshot the log starts at): fetch the latest snapshot.
    DIVERGING: the follower's last epoch ends earlier in the leader's log (or is
    unknown): truncate to the returned (end offset, epoch) and fetch again.
    """
    start, start_epoch = log.start_offset, log.start_epoch
    if start > 0 and (fetch_offset < start or last_fetched_epoch < start_epoch
                      or (fetch_offset == start and last_fetched_epoch != start_epoch)):
        return SNAPSHOT, None
    end = log.end_offset_for_epoch(last_fetched_epoch)
    if end.epoch != last_fetched_epoch or end.offset < fetch_offset:
        return DIVERGING, end
    return VALID, None


def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    """Where a follower truncates for the leader's DivergingEpoch (end offset, epoch)."""
    if diverging.epoch <= 0 or diverging.offset < 0:
        target = min(max(diverging.offset, 0), log.end_offset)
    else:
        local = log.end_offset_for_epoch(diverging.epoch)
        target = min(local.offset, diverging.offset) if local.epoch == diverging.epoch else local.offset
    return max(target, log.start_offset)
