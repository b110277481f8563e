"""Remote expiration by retention.ms, retention.bytes and log start (table-driven)."""

from __future__ import annotations

import pytest
from tiered_helpers import NOW, metadata

from tierlog.tiered import RemoteLogSegmentState
from tierlog.tiered.expiration_rules import (
    PartitionLog,
    RetentionLimits,
    plan_remote_expiration,
)

S = RemoteLogSegmentState
DAY = 86_400_000


def _log(log_start=0, high_watermark=10_000, epoch_entries=((0, 0),)):
    return PartitionLog(log_start_offset=log_start, high_watermark=high_watermark, log_end_offset=10_000,
                        epoch_entries=epoch_entries)


def _remote(*ranges, state=S.COPY_SEGMENT_FINISHED):
    """Finished segments of 100 bytes; segment i has max timestamp NOW + i * DAY."""
    return [metadata(a, b, size=100, max_ts=NOW + i * DAY).with_state(state) for i, (a, b) in enumerate(ranges)]


SEGS = _remote((0, 99), (100, 199), (200, 299), (300, 399))


@pytest.mark.parametrize(("retention_ms", "retention_bytes", "now", "log_start", "local_only", "deleted",
                          "new_start"), [
    (-1, -1, NOW + 9 * DAY, 0, 0, [], None),                   # no limits: nothing goes
    (DAY, -1, NOW + DAY, 0, 0, [0], 100),                      # max ts <= now - retention.ms
    (DAY, -1, NOW + DAY - 1, 0, 0, [], None),
    (DAY, -1, NOW + 3 * DAY, 0, 0, [0, 100, 200], 300),
    (-1, 300, NOW, 0, 0, [0], 100),                            # 400 remote bytes, limit 300
    (-1, 300, NOW, 0, 150, [0, 100], 200),                     # local-only bytes count too: 550 - 300
    (-1, 250, NOW, 0, 0, [0], 100),                            # 150 over: one segment of 100 (not two)
    (-1, 399, NOW, 0, 0, [], None),                            # 1 byte over is less than a segment
    (-1, -1, NOW, 200, 0, [0, 100], None),                     # below the log start: no new log start
    (-1, -1, NOW, 150, 0, [0], None),                          # 100..199 still holds offsets >= 150
    (DAY, 300, NOW + DAY, 0, 0, [0], 100),                     # time expiry also uses up the excess
])
def test_expiration(retention_ms, retention_bytes, now, log_start, local_only, deleted, new_start):
    plan = plan_remote_expiration(SEGS, RetentionLimits(retention_ms, retention_bytes), now_ms=now,
                                  log=_log(log_start), only_local_bytes=local_only)
    assert [m.start_offset for m in plan.to_delete] == deleted
    assert plan.new_log_start_offset == new_start


def test_the_walk_stops_at_the_first_segment_that_stays():
    segs = [*_remote((0, 99)), metadata(100, 199, size=100, max_ts=NOW + 10 * DAY)
            .with_state(S.COPY_SEGMENT_FINISHED), metadata(200, 299, size=100, max_ts=NOW)
            .with_state(S.COPY_SEGMENT_FINISHED)]
    plan = plan_remote_expiration(segs, RetentionLimits(DAY, -1), now_ms=NOW + 2 * DAY,
                                  log=_log(), only_local_bytes=0)
    assert [m.start_offset for m in plan.to_delete] == [0]


def test_failed_deletes_are_retried_and_a_copy_in_progress_stops_the_walk():
    retry = metadata(0, 99, size=100).with_state(S.DELETE_SEGMENT_STARTED)
    copying = metadata(100, 199, size=100)
    plan = plan_remote_expiration([retry, copying, *SEGS[2:]], RetentionLimits(0, -1), now_ms=NOW + 9 * DAY,
                                  log=_log(), only_local_bytes=0,
                                  being_copied=frozenset({copying.segment_id}))
    assert plan.to_delete == (retry,)
    assert plan.new_log_start_offset is None


def test_only_finished_segments_count_as_remote_bytes():
    segs = [*_remote((0, 99)), metadata(100, 199, size=10_000)]     # an unfinished upload
    plan = plan_remote_expiration(segs, RetentionLimits(-1, 150), now_ms=NOW, log=_log(), only_local_bytes=0)
    assert plan.to_delete == ()


@pytest.mark.parametrize(("retention_ms", "retention_bytes", "high_watermark", "deleted", "new_start"), [
    (DAY, -1, 400, [0, 100, 200, 300], 400),
    (DAY, -1, 399, [0, 100, 200], 300),      # 300..399 reaches the high watermark: it stays
    (DAY, -1, 250, [0, 100], 200),           # a new leader's lagging high watermark
    (-1, 0, 250, [0, 100], 200),             # by size too
    (DAY, -1, 0, [], None),
])
def test_retention_never_deletes_a_segment_at_or_above_the_high_watermark(retention_ms, retention_bytes,
                                                                          high_watermark, deleted, new_start):
    plan = plan_remote_expiration(SEGS, RetentionLimits(retention_ms, retention_bytes), now_ms=NOW + 9 * DAY,
                                  log=_log(0, high_watermark), only_local_bytes=0)
    assert [m.start_offset for m in plan.to_delete] == deleted
    assert plan.new_log_start_offset == new_start
    assert new_start is None or new_start <= high_watermark    # [log start, high watermark) stays covered


def _finished(*ranges):
    return [metadata(a, b, size=100, max_ts=NOW).with_state(S.COPY_SEGMENT_FINISHED) for a, b in ranges]


def _spans(segments):
    return sorted((m.start_offset, m.end_offset) for m in segments)


@pytest.mark.parametrize(("ranges", "deleted"), [
    ([(0, 99), (100, 199)], []),                                   # no overlap: nothing
    ([(0, 99), (0, 99)], [(0, 99)]),                               # the same offsets uploaded twice: keep one
    ([(0, 99), (0, 99), (100, 199), (100, 199)], [(0, 99), (100, 199)]),
    ([(0, 199), (50, 99)], [(50, 99)]),                            # wholly inside another
    ([(0, 99), (0, 49), (50, 149)], [(0, 99)]),                    # covered by two others that tile it
    ([(0, 99), (50, 149)], []),                                    # partial overlap: both hold offsets of their own
    ([(0, 99), (50, 149), (0, 149)], [(0, 99), (50, 149)]),
])
def test_a_finished_segment_covered_by_others_is_deleted(ranges, deleted):
    segs = sorted(_finished(*ranges), key=lambda m: m.start_offset)
    plan = plan_remote_expiration(segs, RetentionLimits(-1, -1), now_ms=NOW, log=_log(), only_local_bytes=0)
    assert _spans(plan.to_delete) == deleted
    kept = [m for m in segs if m not in plan.to_delete]
    covered = {o for m in segs for o in range(m.start_offset, m.end_offset + 1)}
    assert {o for m in kept for o in range(m.start_offset, m.end_offset + 1)} == covered
    assert plan.new_log_start_offset is None


def test_of_two_identical_uploads_the_later_one_stays():
    first, second = _finished((0, 99), (0, 99))
    plan = plan_remote_expiration([first, second], RetentionLimits(-1, -1), now_ms=NOW, log=_log(),
                                  only_local_bytes=0)
    assert plan.to_delete == (first,)


def test_a_duplicate_counts_once_towards_retention_bytes():
    segs = _finished((0, 99), (0, 99), (100, 199))               # 200 bytes of distinct data, 300 stored
    plan = plan_remote_expiration(segs, RetentionLimits(-1, 200), now_ms=NOW, log=_log(), only_local_bytes=0)
    assert _spans(plan.to_delete) == [(0, 99)]                    # the duplicate only
    assert plan.new_log_start_offset is None


def test_a_finished_segment_outside_the_leaders_epoch_lineage_is_deleted():
    ours = _finished((0, 99), (100, 199))
    zombie = metadata(150, 249, epochs=((1, 150),), size=100, max_ts=NOW).with_state(S.COPY_SEGMENT_FINISHED)
    segs = sorted([*ours, zombie], key=lambda m: m.start_offset)
    log = _log(epoch_entries=((0, 0), (2, 200)))     # epoch 1's leader diverged: this log went on in epoch 2
    plan = plan_remote_expiration(segs, RetentionLimits(-1, -1), now_ms=NOW, log=log, only_local_bytes=0)
    assert plan.to_delete == (zombie,)               # unreferenced: deleted, the log start unchanged
    assert plan.new_log_start_offset is None


def test_a_stale_leader_leaves_its_successors_segments_alone():
    # found by the nemesis soak (bench/soak.py --short --seed 7): broker 5, leader in epoch 5, uploaded
    # [2032, 3046]; broker 6, leader in epoch 6, uploaded the same offsets again; broker 5, not yet aware
    # of epoch 6, deleted the epoch-6 segment as outside its lineage, and remote storage lost the offsets
    ours = metadata(0, 99, epochs=((5, 0),), size=100, max_ts=NOW).with_state(S.COPY_SEGMENT_FINISHED)
    theirs = metadata(0, 99, epochs=((5, 0), (6, 50)), size=100, max_ts=NOW).with_state(S.COPY_SEGMENT_FINISHED)
    newer = metadata(100, 199, epochs=((6, 100),), size=100, max_ts=NOW).with_state(S.COPY_SEGMENT_FINISHED)
    plan = plan_remote_expiration([ours, theirs, newer], RetentionLimits(-1, 100), now_ms=NOW,
                                  log=_log(epoch_entries=((5, 0),)), only_local_bytes=0)
    assert plan.to_delete == () and plan.new_log_start_offset is None


def test_a_zombie_neither_counts_towards_retention_bytes_nor_hides_a_segment_it_overlaps():
    ours = _finished((0, 99), (100, 199))
    zombie = metadata(100, 199, epochs=((1, 100),), size=100, max_ts=NOW).with_state(S.COPY_SEGMENT_FINISHED)
    segs = [*ours, zombie]                           # listed last: as a duplicate it would be kept
    plan = plan_remote_expiration(segs, RetentionLimits(-1, 200), now_ms=NOW,
                                  log=_log(epoch_entries=((0, 0), (2, 200))), only_local_bytes=0)
    assert plan.to_delete == (zombie,)               # 200 bytes of this log's data: within retention.bytes


def test_only_offsets_from_the_log_start_on_count_for_covering():
    late = _finished((447, 466))                     # an old leader's upload, finished after the log start moved
    ours = _finished((461, 474))
    plan = plan_remote_expiration([*late, *ours], RetentionLimits(-1, -1), now_ms=NOW, log=_log(461),
                                  only_local_bytes=0)
    assert plan.to_delete == tuple(late)
