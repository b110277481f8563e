"""The remote segment a follower rebuilds from (tiered/rebuild_rules.py)."""
from __future__ import annotations

from tiered_helpers import metadata

from tierlog.tiered.rebuild_rules import RebuildPlan, plan_rebuild, rebuilt_log_start


def test_the_segment_holding_the_offset_below_the_local_start_is_taken():
    a, b, c = metadata(0, 9), metadata(10, 19), metadata(20, 29)
    assert plan_rebuild([a, b, c], 0, 20) == RebuildPlan(b, 0, 20)
    assert plan_rebuild([a, b, c], 5, 15) == RebuildPlan(b, 5, 15)


def test_the_log_start_is_never_above_the_local_start():
    b = metadata(10, 19)
    assert plan_rebuild([b], 25, 20) == RebuildPlan(b, 20, 20)


def test_not_possible_yet_without_a_segment_holding_it_or_at_offset_zero():
    assert plan_rebuild([metadata(0, 9)], 0, 12) is None
    assert plan_rebuild([], 0, 5) is None
    assert plan_rebuild([metadata(0, 9)], 0, 0) is None


def test_of_overlapping_segments_the_last_one_is_taken():
    old, late = metadata(10, 19), metadata(5, 24)
    assert plan_rebuild([old, late], 0, 20).segment is late


def test_a_log_start_the_uploaded_checkpoint_proves_stale_is_raised():
    """The simulator's seed 10: log start 23 asked, then moved to 34 before the segment holding
    T - 1 was uploaded with a checkpoint starting at 34."""
    plan = RebuildPlan(metadata(118, 129), 23, 130)
    assert rebuilt_log_start(plan, [(0, 34), (2, 100)]) == 34
    assert rebuilt_log_start(plan, [(0, 0), (2, 100)]) == 23      # an older checkpoint: the asked one
    assert rebuilt_log_start(plan, []) == 23
    assert rebuilt_log_start(RebuildPlan(metadata(0, 9), 0, 10), [(3, 12)]) == 10   # never above the local start
