"""Which parts of an offset range are read straight from remote segments (sans-IO, no Spark)."""
import uuid

from tierlog.spark.planning import OffsetRange
from tierlog.spark.remote_planning import cover_range, lineage_source, readable_segments
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    TopicIdPartition,
)

TP = TopicIdPartition(b"t" * 16, "t", 0)


def _segment(start, end, epochs):
    return RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId(TP, uuid.uuid4().bytes), start_offset=start, end_offset=end,
        max_timestamp_ms=0, broker_id=1, event_timestamp_ms=0, segment_leader_epochs=tuple(epochs),
        segment_size_in_bytes=100)


def _pieces(cover):
    return ([(r.start, r.end, s.start_offset) for r, s in cover.remote], [(r.start, r.end) for r in cover.brokers])


def test_the_range_is_cut_at_segments_gaps_and_the_highest_tiered_offset():
    segments = [_segment(0, 99, [(0, 0)]), _segment(100, 199, [(0, 100)]), _segment(300, 399, [(1, 300)])]
    cover = cover_range(OffsetRange("t", 0, 50, 450), segments, highest_tiered=349)
    assert _pieces(cover) == ([(50, 100, 0), (100, 200, 100), (300, 350, 300)], [(200, 300), (350, 450)])
    assert _pieces(cover_range(OffsetRange("t", 0, 500, 600), segments, 399)) == ([], [(500, 600)])
    assert _pieces(cover_range(OffsetRange("t", 0, 0, 50), [], -1)) == ([], [(0, 50)])


def test_a_redundant_second_upload_is_not_read_twice():
    first, second = _segment(0, 99, [(0, 0)]), _segment(50, 149, [(0, 50)])
    cover = cover_range(OffsetRange("t", 0, 0, 150), [first, second], 149)
    assert _pieces(cover) == ([(0, 100, 0), (100, 150, 50)], [])


def test_a_zombie_upload_of_a_diverged_leader_is_not_read():
    # epoch 1's leader uploaded [100, 199] but the log was truncated at 150 when epoch 2 began
    kept = [_segment(0, 99, [(0, 0)]), _segment(100, 149, [(1, 100)]), _segment(150, 249, [(2, 150)])]
    zombie = _segment(100, 199, [(1, 100)])
    segments = [*kept, zombie]
    source = lineage_source(segments, highest_tiered=249)
    assert source is kept[2]
    entries = [(0, 0), (1, 100), (2, 150)]           # what the newest upload's checkpoint holds
    assert readable_segments(segments, entries, 250) == kept
    cover = cover_range(OffsetRange("t", 0, 0, 250), readable_segments(segments, entries, 250), 249)
    assert _pieces(cover) == ([(0, 100, 0), (100, 150, 100), (150, 250, 150)], [])


def test_nothing_above_the_leaders_highest_tiered_offset_stands_for_the_lineage():
    segments = [_segment(0, 99, [(0, 0)]), _segment(100, 199, [(3, 100)])]
    assert lineage_source(segments, highest_tiered=99) is segments[0]
    assert lineage_source(segments, highest_tiered=-1) is None
    assert lineage_source(segments, highest_tiered=None) is segments[1]
