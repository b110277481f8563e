"""The log cleaner's sans-IO rules: which log and range, the offset map, the verdict per
record and batch (latest key wins, tombstone horizon), grouping, and the rewritten batch."""

from storage_helpers import NOW

from tierlog.records import Record, build_batch, decode_batches, validate
from tierlog.records.filtered import empty_batch, filtered_batch
from tierlog.records.header import NO_TIMESTAMP, parse_header
from tierlog.storage.cleaner_rules import (
    OffsetMap,
    SegmentStat,
    filter_batch,
    filthiest,
    group_segments,
    keep_record,
    log_to_clean,
    should_clean,
)

DAY = 86_400_000
LONG_MAX = 2**63 - 1


def _segments(*pairs):
    """SegmentStats from (base, size) pairs; the last one is the active segment."""
    return [SegmentStat(base, size, NOW) for base, size in pairs]


def _map(*pairs) -> OffsetMap:
    offsets = OffsetMap(1000)
    for key, offset in pairs:
        offsets.put(key, offset)
    return offsets


def _batch(records, base=0, **kwargs):
    data = build_batch(records, base, **kwargs)
    return parse_header(data), records, data


# --- which range ---------------------------------------------------------------------------------

def test_the_active_segment_is_never_cleanable():
    segs = _segments((0, 100), (10, 100), (20, 100))
    target = log_to_clean(segs, 0, 25, None, None, 0, LONG_MAX, NOW)
    assert (target.first_dirty_offset, target.first_uncleanable_offset) == (0, 20)
    assert (target.clean_bytes, target.cleanable_bytes) == (0, 200)
    only_active = log_to_clean(_segments((0, 100)), 0, 5, None, None, 0, LONG_MAX, NOW)
    assert only_active.cleanable_bytes == 0 and not should_clean(only_active, 0.0)


def test_the_high_watermark_bounds_the_range_to_whole_segments_below_it():
    segs = _segments((0, 100), (10, 100), (20, 100), (30, 100))
    target = log_to_clean(segs, 0, 35, None, 15, 0, LONG_MAX, NOW)   # 15 is inside the segment at 10
    assert target.first_uncleanable_offset == 10
    assert target.cleanable_bytes == 100
    at_boundary = log_to_clean(segs, 0, 35, None, 20, 0, LONG_MAX, NOW)
    assert at_boundary.first_uncleanable_offset == 20


def test_dirty_ratio_counts_clean_and_dirty_bytes_and_decides_against_the_threshold():
    segs = _segments((0, 300), (10, 100), (20, 100), (30, 50))
    target = log_to_clean(segs, 0, 35, 10, None, 0, LONG_MAX, NOW)
    assert (target.clean_bytes, target.cleanable_bytes) == (300, 200)
    assert target.cleanable_ratio == 0.4
    assert should_clean(target, 0.39) and not should_clean(target, 0.4)   # strictly above, as Kafka
    assert not should_clean(target, 0.5)


def test_checkpoint_out_of_range_resets_to_the_log_start():
    segs = _segments((0, 100), (10, 100), (20, 100))
    above = log_to_clean(segs, 5, 25, 99, None, 0, LONG_MAX, NOW)
    below = log_to_clean(segs, 5, 25, 2, None, 0, LONG_MAX, NOW)
    assert (above.first_dirty_offset, above.reset_checkpoint) == (5, True)
    assert (below.first_dirty_offset, below.reset_checkpoint) == (5, True)
    fine = log_to_clean(segs, 5, 25, 12, None, 0, LONG_MAX, NOW)
    assert (fine.first_dirty_offset, fine.reset_checkpoint) == (12, False)


def test_min_compaction_lag_holds_back_young_segments():
    segs = [SegmentStat(0, 100, NOW - 10_000), SegmentStat(10, 100, NOW - 10), SegmentStat(20, 100, NOW)]
    target = log_to_clean(segs, 0, 25, None, None, 1000, LONG_MAX, NOW)
    assert target.first_uncleanable_offset == 10
    none_old = log_to_clean(segs, 0, 25, None, None, 100_000, LONG_MAX, NOW)
    assert none_old.cleanable_bytes == 0


def test_max_compaction_lag_forces_a_clean_below_the_ratio():
    segs = [SegmentStat(0, 1000, NOW, NOW - 5), SegmentStat(10, 10, NOW, NOW - 1000), SegmentStat(20, 1, NOW, NOW)]
    target = log_to_clean(segs, 0, 25, 10, None, 0, 500, NOW)
    assert target.needs_compaction_now and target.cleanable_ratio < 0.5
    assert should_clean(target, 0.5)
    relaxed = log_to_clean(segs, 0, 25, 10, None, 0, LONG_MAX, NOW)
    assert not relaxed.needs_compaction_now and not should_clean(relaxed, 0.5)


def test_filthiest_picks_the_highest_ratio():
    a = log_to_clean(_segments((0, 100), (10, 100), (20, 1)), 0, 25, 10, None, 0, LONG_MAX, NOW)
    b = log_to_clean(_segments((0, 100), (10, 100), (20, 1)), 0, 25, 0, None, 0, LONG_MAX, NOW)
    assert filthiest([("a", a), ("b", b)])[0] == "b"
    assert filthiest([]) is None


# --- which records ---------------------------------------------------------------------------------

def test_latest_offset_per_key_wins_and_keys_only_in_the_clean_section_stay():
    offsets = _map((b"a", 5), (b"b", 7))
    assert keep_record(Record(5, NOW, b"a", b"x"), offsets, NO_TIMESTAMP, NOW)
    assert not keep_record(Record(3, NOW, b"a", b"x"), offsets, NO_TIMESTAMP, NOW)
    assert keep_record(Record(2, NOW, b"c", b"x"), offsets, NO_TIMESTAMP, NOW)       # not in the map
    assert keep_record(Record(9, NOW, b"a", b"x"), offsets, NO_TIMESTAMP, NOW)       # past the map's end
    assert not keep_record(Record(4, NOW, None, b"x"), offsets, NO_TIMESTAMP, NOW)   # no key


def test_offset_map_is_bounded():
    offsets = OffsetMap.from_buffer(1280, load_factor=1.0)
    assert offsets.capacity == 10
    for i in range(10):
        offsets.put(b"k%d" % i, i)
    assert offsets.full and not offsets.room_for(1)
    assert offsets.get(b"k3") == 3 and offsets.get(b"other") == -1


def test_tombstone_gets_a_horizon_then_goes_after_it():
    retention = 1000
    header, records, _ = _batch([Record(0, NOW, b"a", b"1"), Record(1, NOW, b"b", None), Record(2, NOW, b"c", b"3")])
    offsets = _map((b"a", 10), (b"b", 1), (b"c", 2))
    first = filter_batch(header, records, offsets, NOW, retention, False)
    assert not first.copy and [r.offset for r in first.records] == [1, 2]
    assert first.delete_horizon_ms == NOW + retention
    rewritten = filtered_batch(header, first.records, first.delete_horizon_ms)
    again_header = parse_header(rewritten)
    assert again_header.has_delete_horizon and again_header.base_timestamp == NOW + retention
    (_, again_records), = list(decode_batches(rewritten))
    before = filter_batch(again_header, again_records, offsets, NOW + retention - 1, retention, False)
    assert before.copy                                     # horizon not reached: kept as it is
    after = filter_batch(again_header, again_records, offsets, NOW + retention, retention, False)
    assert [r.offset for r in after.records] == [2]        # the tombstone is gone


def test_a_batch_keeping_nothing_is_dropped_unless_it_must_stay_as_an_empty_batch():
    header, records, _ = _batch([Record(0, NOW, b"a", b"1")])
    offsets = _map((b"a", 5))
    dropped = filter_batch(header, records, offsets, NOW, DAY, False)
    assert not dropped.records and not dropped.keep_empty
    kept = filter_batch(header, records, offsets, NOW, DAY, True)
    assert not kept.records and kept.keep_empty


def test_control_batches_are_kept_whole():
    header, records, _ = _batch([Record(0, NOW, b"\x00\x00\x00\x01", b"marker")], control=True, producer_id=7,
                                producer_epoch=0, transactional=True)
    verdict = filter_batch(header, records, _map((b"\x00\x00\x00\x01", 9)), NOW, DAY, False)
    assert verdict.copy


# --- the rewritten batch -----------------------------------------------------------------------------

def test_filtered_batch_keeps_offsets_producer_fields_and_gets_a_valid_crc():
    records = [Record(10 + i, NOW + i, b"k%d" % i, b"v%d" % i) for i in range(5)]
    original = build_batch(records, 10, compression=3, producer_id=42, producer_epoch=3, base_sequence=100,
                           partition_leader_epoch=6)
    header = parse_header(original)
    data = filtered_batch(header, [records[1], records[3]])
    validate(data)                                          # CRC and layout check
    new = parse_header(data)
    assert (new.base_offset, new.last_offset_delta, new.producer_id, new.producer_epoch, new.base_sequence,
            new.partition_leader_epoch, new.compression) == (10, 4, 42, 3, 100, 6, 3)
    assert new.records_count == 2 and not new.has_delete_horizon
    (_, decoded), = list(decode_batches(data))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in decoded] == \
        [(r.offset, r.timestamp, r.key, r.value) for r in (records[1], records[3])]
    empty = empty_batch(header)
    validate(empty)
    assert parse_header(empty).records_count == 0 and parse_header(empty).last_offset == 14


# --- grouping -------------------------------------------------------------------------------------------

def test_groups_stay_within_segment_bytes():
    segs = _segments((0, 400), (10, 400), (20, 400), (30, 900), (40, 100))
    groups = group_segments(segs, 1000, 50)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20], [30, 40]]


def test_groups_never_span_more_than_int32_offsets():
    segs = _segments((0, 10), (2**31 - 5, 10), (2**31 + 100, 10))
    groups = group_segments(segs, 10_000, 2**32)
    assert [[s.base_offset for s in g] for g in groups] == [[0], [2**31 - 5], [2**31 + 100]]
