"""Which remote segment a follower rebuilds its log from (KIP-405 / KIP-1023, sans-IO).

A follower that restarts its log empty at ``local_start`` (KIP-405: the
leader's local log start; KIP-1023: the start offset T) takes the leader-epoch
checkpoint and producer snapshot of the finished remote segment holding
``local_start - 1``; its log start becomes min(the leader's log start,
``local_start``). Remote segments of a partition never overlap once uploads
resume after the highest finished one (``copy_rules``), so the segment is found
by offset alone (Kafka asks OffsetForLeaderEpoch first); if several still hold
the offset (an old leader's late upload), the last one in the metadata's order
is taken. ``plan_rebuild`` answers None while no such segment is known (or
``local_start`` is 0): the follower backs off and asks again.

``rebuilt_log_start``: the log start the rebuilt log takes, given the segment's
uploaded leader-epoch checkpoint. The leader's log start was asked before the
segment was read; remote retention may have moved it since, and the upload may
even postdate that move (found by the simulator: log start 23 asked, then the
leader moved it to 34 and uploaded the segment holding T - 1, whose checkpoint
starts at 34). A checkpoint's first entry starts at the uploader's log start at
upload time (the cache is truncated from the start with it), so a log start
below it is stale: the rebuilt log starts at max(asked, first entry), never
above ``local_start``. Otherwise the log would claim [asked, first entry) --
deleted offsets no epoch covers -- until its next fetch answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata

__all__ = ["RebuildPlan", "plan_rebuild", "rebuilt_log_start"]


@dataclass(frozen=True, slots=True)
class RebuildPlan:
    segment: RemoteLogSegmentMetadata      # holds local_start - 1: its checkpoint and snapshot are read
    log_start_offset: int
    local_log_start_offset: int


def plan_rebuild(finished: Sequence[RemoteLogSegmentMetadata], log_start_offset: int,
                 local_start: int) -> RebuildPlan | None:
    """The rebuild of a log restarting at ``local_start``, or None if not possible yet."""
    previous = local_start - 1
    holding = [m for m in finished if m.start_offset <= previous <= m.end_offset]
    if previous < 0 or not holding:
        return None
    return RebuildPlan(holding[-1], min(log_start_offset, local_start), local_start)


def rebuilt_log_start(plan: RebuildPlan, checkpoint: Sequence[tuple[int, int]]) -> int:
    """max(the asked log start, the checkpoint's first entry start), at most the local start."""
    first = checkpoint[0][1] if checkpoint else plan.log_start_offset
    return min(max(plan.log_start_offset, first), plan.local_log_start_offset)
