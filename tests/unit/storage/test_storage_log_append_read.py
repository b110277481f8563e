"""Log append and read: offsets, rolls, whole-batch reads, errors, follower appends."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_helpers import NOW, batch, batch_bases, config, offsets_in, read_all

from tierlog.records import (
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    MESSAGE_TOO_LARGE,
    RECORD_LIST_TOO_LARGE,
    CompressionType,
    InvalidRecordError,
    TimestampType,
    decode_batches,
    parse_header,
    validate,
)
from tierlog.storage import (
    InconsistentTopicIdError,
    KafkaStorageError,
    Log,
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
)


def _open(path: Path, **props) -> Log:
    return Log.open(path / "topic-0", config(**props), NOW)


def _fill(log: Log, counts: list[int], epoch: int = 0, value_size: int = 40) -> list[tuple[int, int, int]]:
    """Append batches of the given record counts; returns (base, last offset, size) of each."""
    placed = []
    for i, count in enumerate(counts):
        data = batch(count, NOW + i, value_size=value_size)
        result = log.append(data, epoch, NOW + i)
        placed.append((result.base_offset, result.last_offset, len(data)))
    return placed


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=60))
def test_offsets_are_dense_and_monotonic_across_rolls(tmp_path_factory, counts):
    log = _open(tmp_path_factory.mktemp("log"), segment_index_bytes=64)
    expected = 0
    for count, (base, _last, _size) in zip(counts, _fill(log, counts)):
        assert base == expected
        expected += count
    assert log.log_end_offset == expected == sum(counts)
    assert offsets_in(read_all(log)) == list(range(expected))
    bases = [info.base_offset for info in log.segment_infos()]
    assert bases == sorted(set(bases)) and all(info.size <= 4096 for info in log.segment_infos())
    log.close()
    reopened = Log.open(log.directory, config(segment_index_bytes=64), NOW)
    assert offsets_in(read_all(reopened)) == list(range(expected))
    reopened.close()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=40), st.data())
def test_read_returns_whole_batches_within_limits(tmp_path_factory, counts, data):
    log = _open(tmp_path_factory.mktemp("log"))
    placed = _fill(log, counts, value_size=data.draw(st.integers(0, 300)))
    end = log.log_end_offset
    offset = data.draw(st.integers(0, end))
    max_bytes = data.draw(st.integers(0, 6000))
    upper = data.draw(st.none() | st.integers(0, end))
    min_one = data.draw(st.booleans())
    result = log.read(offset, max_bytes, upper, min_one)
    # brute-force model: batches from the one holding ``offset``, all of them below ``upper``
    stop = end if upper is None else upper
    expected, total = [], 0
    for base, last, size in placed:
        if last < offset:
            continue
        if last >= stop or (total + size > max_bytes and not (min_one and not expected)):
            break
        expected.append(base)
        total += size
    got = result.to_bytes()
    assert batch_bases(got) == expected
    assert result.size == len(got) == total == sum(len(p) for p in result.parts)
    log.close()


def test_offset_inside_a_batch_returns_that_batch(tmp_path):
    log = _open(tmp_path)
    _fill(log, [5, 5])
    assert batch_bases(log.read(7, 10_000).to_bytes()) == [5]
    assert batch_bases(log.read(4, 10_000).to_bytes()) == [0, 5]


def test_read_edges(tmp_path):
    log = _open(tmp_path)
    _fill(log, [2, 2])
    assert log.read(4, 1000).parts == [] and log.read(4, 1000).size == 0
    assert log.read(2, 1000, upper_bound=2).size == 0
    assert log.read(0, 0, min_one_batch=False).size == 0
    assert batch_bases(log.read(0, 0).to_bytes()) == [0]
    for bad in (-1, 5):
        with pytest.raises(OffsetOutOfRangeError) as err:
            log.read(bad, 1000)
        assert err.value.error_code == 1


def test_region_is_a_file_range_of_the_segment(tmp_path):
    log = _open(tmp_path)
    _fill(log, [3])
    (region,) = log.read(0, 1000).parts
    with open(log.segment_infos()[0].log_path, "rb") as handle:
        assert handle.read()[region.offset:region.offset + len(region)] == region.read()


def test_append_result_and_stamping(tmp_path):
    log = _open(tmp_path)
    log.append(batch(2), 3, NOW)
    result = log.append(batch(4, NOW + 50), 4, NOW + 60)
    assert result.base_offset == 2 and result.last_offset == 5 and result.record_count == 4
    assert result.log_append_time_ms == -1 and result.max_timestamp == NOW + 53 and result.log_start_offset == 0
    headers = [h for h, _ in decode_batches(read_all(log))]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 3), (2, 4)]
    assert log.epoch_entries() == [(3, 0), (4, 2)] and log.latest_epoch == 4
    with pytest.raises(AssertionError):
        log.append(batch(1), 2, NOW)


def test_log_append_time(tmp_path):
    log = _open(tmp_path, message_timestamp_type="LogAppendTime")
    result = log.append(batch(3, NOW - 10_000_000, compression=CompressionType.GZIP), 0, NOW + 7)
    assert result.log_append_time_ms == NOW + 7 and result.max_timestamp == NOW + 7
    ((header, records),) = list(decode_batches(read_all(log)))
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in records] == [NOW + 7] * 3
    assert log.offset_for_timestamp(NOW + 7) == (0, NOW + 7, 0)


@pytest.mark.parametrize("props, data, code", [
    ({"max_message_bytes": 200}, lambda: batch(5), MESSAGE_TOO_LARGE),
    ({}, lambda: batch(1) + batch(1), INVALID_RECORD),
    ({}, lambda: bytearray(), INVALID_RECORD),
    ({}, lambda: batch(2, NOW + 3_600_001), INVALID_TIMESTAMP),
    ({"message_timestamp_before_max_ms": 1000}, lambda: batch(2, NOW - 1001), INVALID_TIMESTAMP),
    ({}, lambda: batch(2, timestamp_type=TimestampType.LOG_APPEND_TIME), INVALID_TIMESTAMP),
    ({"internal_segment_bytes": 300, "max_message_bytes": 10_000}, lambda: batch(5, value_size=100),
     RECORD_LIST_TOO_LARGE),
])
def test_append_errors(tmp_path, props, data, code):
    log = _open(tmp_path, **props)
    with pytest.raises(InvalidRecordError) as err:
        log.append(data(), 0, NOW)
    assert err.value.error_code == code
    assert log.log_end_offset == 0


def test_timestamp_bounds_are_inclusive(tmp_path):
    log = _open(tmp_path, message_timestamp_before_max_ms=1000)
    log.append(batch(1, NOW - 1000), 0, NOW)
    log.append(batch(1, NOW + 3_600_000), 0, NOW)
    assert log.log_end_offset == 2


def test_follower_append_keeps_offsets_and_epochs(tmp_path):
    leader = Log.open(tmp_path / "leader-0", config(), NOW)
    _fill(leader, [3, 2], epoch=1)
    leader.append(batch(4), 2, NOW)
    follower = Log.open(tmp_path / "follower-0", config(), NOW)
    data = bytearray(read_all(leader))
    result = follower.append_as_follower(data, NOW)
    assert (result.base_offset, result.last_offset, result.record_count) == (0, 8, 9)
    assert read_all(follower) == read_all(leader)
    assert follower.epoch_entries() == [(1, 0), (2, 5)]
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(bytearray(leader.read(5, 100_000).to_bytes()), NOW)
    assert follower.append_as_follower(bytearray(), NOW).record_count == 0


def test_follower_append_larger_than_a_segment_rolls_between_batches(tmp_path):
    leader = Log.open(tmp_path / "leader-0", config(internal_segment_bytes=100_000), NOW)
    _fill(leader, [5] * 40, value_size=100)
    follower = Log.open(tmp_path / "follower-0", config(internal_segment_bytes=4096), NOW)
    follower.append_as_follower(bytearray(read_all(leader)), NOW)
    assert offsets_in(read_all(follower)) == list(range(200))
    assert follower.segment_count > 5 and all(s.size <= 4096 for s in follower.segment_infos())


def test_segment_ms_roll_uses_first_batch_timestamp(tmp_path):
    log = _open(tmp_path, segment_ms=1000)
    log.append(batch(1, NOW), 0, NOW)
    log.append(batch(1, NOW + 1000), 0, NOW)
    assert log.segment_count == 1
    log.append(batch(1, NOW + 1001), 0, NOW)
    assert log.segment_count == 2
    assert [s.base_offset for s in log.segment_infos()] == [0, 2]


def test_flush_messages_advances_recovery_point(tmp_path):
    log = _open(tmp_path, flush_messages=5)
    log.append(batch(3), 0, NOW)
    assert log.recovery_point == 0
    log.append(batch(3), 0, NOW)
    assert log.recovery_point == 6
    log.append(batch(1), 0, NOW)
    log.tick(NOW + 10)
    assert log.recovery_point == 6
    log.flush(NOW)
    assert log.recovery_point == 7


def test_flush_ms_by_tick(tmp_path):
    log = _open(tmp_path, flush_ms=1000)
    log.append(batch(2), 0, NOW)
    log.tick(NOW + 999)
    assert log.recovery_point == 0
    log.tick(NOW + 1000)
    assert log.recovery_point == 2


def test_topic_id_is_recorded_and_checked(tmp_path):
    topic_id = b"\x11" * 16
    log = Log.open(tmp_path / "t-0", config(), NOW, topic_id)
    log.close()
    assert Log.open(tmp_path / "t-0", config(), NOW).topic_id == topic_id
    with pytest.raises(InconsistentTopicIdError):
        Log.open(tmp_path / "t-0", config(), NOW, b"\x22" * 16)


def test_read_only_buffers_are_copied_before_stamping(tmp_path):
    log = _open(tmp_path)
    log.append(batch(2), 0, NOW)
    frame = bytes(b"header" + batch(3))
    result = log.append(memoryview(frame)[6:], 0, NOW)
    assert result.base_offset == 2 and offsets_in(read_all(log)) == list(range(5))
    writable = bytearray(b"xx" + batch(1))
    log.append(memoryview(writable)[2:], 4, NOW)
    assert parse_header(writable, 2).base_offset == 5  # stamped in place


def test_closed_log_raises_storage_error(tmp_path):
    log = _open(tmp_path)
    log.close()
    with pytest.raises(KafkaStorageError) as err:
        log.append(batch(1), 0, NOW)
    assert err.value.error_code == 56


def test_appended_bytes_are_the_produced_bytes_but_stamped(tmp_path):
    log = _open(tmp_path)
    log.append(batch(2), 0, NOW)
    produced = batch(3, NOW + 1, compression=CompressionType.ZSTD)
    original = bytes(produced)
    log.append(produced, 9, NOW)
    stored = log.read(2, 10_000).to_bytes()
    assert stored == bytes(produced)
    assert stored[61:] == original[61:] and stored[16:] == original[16:]
    header = parse_header(stored)
    assert (header.base_offset, header.partition_leader_epoch) == (2, 9)
    validate(stored)
