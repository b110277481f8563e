"""Remote pieces into tasks of about a target size (sans-IO, no Spark): small segments grouped,
large ones split, maxRecordsPerPartition and minPartitions honoured, every offset once."""
import uuid
from itertools import pairwise

from tierlog.spark.planning import OffsetRange
from tierlog.spark.remote_grouping import RemotePiece, group_pieces
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    TopicIdPartition,
)


def _piece(partition, start, end, seg_start=None, seg_end=None, size=None):
    """``[start, end)`` of a segment of 10 bytes an offset (``[seg_start, seg_end]``, the piece by default)."""
    seg_start, seg_end = start if seg_start is None else seg_start, end - 1 if seg_end is None else seg_end
    tp = TopicIdPartition(b"t" * 16, "t", partition)
    segment = RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId(tp, uuid.uuid4().bytes), start_offset=seg_start, end_offset=seg_end,
        max_timestamp_ms=0, broker_id=1, event_timestamp_ms=0, segment_leader_epochs=((0, seg_start),),
        segment_size_in_bytes=size if size is not None else 10 * (seg_end - seg_start + 1))
    return RemotePiece(OffsetRange("t", partition, start, end), segment)


def _ranges(tasks):
    return [[(p.range.partition, p.range.start, p.range.end) for p in task] for task in tasks]


def _every_offset_once(pieces, tasks):
    want = sorted((p.range.partition, o) for p in pieces for o in range(p.range.start, p.range.end))
    got = [(p.range.partition, o) for task in tasks for p in task for o in range(p.range.start, p.range.end)]
    assert sorted(got) == want and len(got) == len(set(got))
    for task in tasks:                     # one partition, contiguous, in offset order
        assert len({p.range.partition for p in task}) == 1
        assert all(a.range.end == b.range.start for a, b in pairwise(task))


def test_small_segments_are_grouped_up_to_the_target_within_one_partition():
    pieces = [_piece(0, s, s + 100) for s in range(0, 1000, 100)] + [_piece(1, 0, 100), _piece(1, 100, 200)]
    tasks = group_pieces(pieces, target_bytes=3000, max_records=None, min_partitions=None)
    assert _ranges(tasks) == [[(0, 0, 100), (0, 100, 200), (0, 200, 300)], [(0, 300, 400), (0, 400, 500),
                              (0, 500, 600)], [(0, 600, 700), (0, 700, 800), (0, 800, 900)], [(0, 900, 1000)],
                              [(1, 0, 100), (1, 100, 200)]]
    _every_offset_once(pieces, tasks)


def test_pieces_with_a_gap_between_them_are_not_grouped():
    pieces = [_piece(0, 0, 100), _piece(0, 300, 400)]      # [100, 300) goes through the brokers
    assert _ranges(group_pieces(pieces, 10_000, None, None)) == [[(0, 0, 100)], [(0, 300, 400)]]


def test_a_large_segment_is_split_to_the_target_and_a_part_of_it_by_its_share():
    whole = _piece(0, 0, 1000)                               # 10,000 bytes
    assert _ranges(group_pieces([whole], 2500, None, None)) == [[(0, s, s + 250)] for s in range(0, 1000, 250)]
    tail = _piece(0, 900, 1000, seg_start=0, seg_end=999)    # a tenth of the segment: 1,000 bytes
    assert _ranges(group_pieces([tail], 2500, None, None)) == [[(0, 900, 1000)]]


def test_max_records_per_partition_bounds_splits_and_groups():
    pieces = [_piece(0, s, s + 100) for s in range(0, 400, 100)]
    tasks = group_pieces(pieces, 10**9, max_records=250, min_partitions=None)
    assert [sum(p.range.size for p in t) for t in tasks] == [200, 200]
    tasks = group_pieces([_piece(0, 0, 1000)], 10**9, max_records=300, min_partitions=None)
    assert [sum(p.range.size for p in t) for t in tasks] == [250, 250, 250, 250]
    _every_offset_once([_piece(0, 0, 1000)], tasks)


def test_min_partitions_lowers_the_target_so_there_are_at_least_that_many_tasks():
    pieces = [_piece(p, 0, 10) for p in range(3)] + [_piece(0, 10, 1000)]
    for wanted in (1, 2, 5, 16):
        tasks = group_pieces(pieces, 10**9, None, min_partitions=wanted)
        assert len(tasks) >= wanted
        _every_offset_once(pieces, tasks)
    assert len(group_pieces(pieces, 10**9, None, None)) == 3               # one task a partition
