"""Timestamp/epoch lookups, retention, delayed deletion, truncation."""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_helpers import NOW, batch, config, offsets_in, read_all

from tierlog.records import CompressionType
from tierlog.storage import Log, OffsetOutOfRangeError

DAY = 24 * 3600 * 1000


def _log(tmp_path, **props) -> Log:
    return Log.open(tmp_path / "t-0", config(**props), NOW)


# --- lookups -------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.integers(0, 1000), min_size=1, max_size=6), min_size=1, max_size=30),
       st.integers(-10, 1100), st.sampled_from([CompressionType.NONE, CompressionType.LZ4]))
def test_offset_for_timestamp_matches_brute_force(tmp_path_factory, batches, target, codec):
    log = Log.open(tmp_path_factory.mktemp("ts") / "t-0", config(index_interval_bytes=0), NOW)
    records = []  # (offset, timestamp, epoch)
    for i, stamps in enumerate(batches):
        epoch = i // 10
        result = log.append(batch(timestamps=[NOW + t for t in stamps], compression=codec), epoch, NOW)
        records += [(result.base_offset + j, NOW + t, epoch) for j, t in enumerate(stamps)]
    expected = next(((o, t, e) for o, t, e in records if t >= NOW + target), None)
    assert log.offset_for_timestamp(NOW + target) == expected
    best = max(t for _o, t, _e in records)
    assert log.max_timestamp_offset() == next((o, t, e) for o, t, e in records if t == best)
    log.close()


def test_timestamp_lookups_skip_below_log_start_and_handle_empty(tmp_path):
    log = _log(tmp_path)
    assert log.offset_for_timestamp(0) is None and log.max_timestamp_offset() is None
    log.append(batch(4, NOW), 0, NOW)
    log.increment_log_start_offset(2)
    assert log.offset_for_timestamp(0) == (2, NOW + 2, 0)


def test_end_offset_for_epoch(tmp_path):
    log = _log(tmp_path)
    log.append(batch(3), 1, NOW)
    log.append(batch(2), 3, NOW)
    assert log.end_offset_for_epoch(1) == (1, 3)
    assert log.end_offset_for_epoch(2) == (1, 3)
    assert log.end_offset_for_epoch(3) == (3, 5)
    assert log.end_offset_for_epoch(0) == (0, 0)
    assert log.end_offset_for_epoch(4) == (-1, -1)


# --- retention -----------------------------------------------------------------------------------


def _segments(log):
    return [(s.base_offset, s.next_offset) for s in log.segment_infos()]


def _fill_segments(log, count, timestamp=NOW, epoch=0):
    while log.segment_count < count:
        log.append(batch(3, timestamp, value_size=300), epoch, timestamp)


def test_retention_by_time_never_deletes_the_active_segment(tmp_path):
    log = _log(tmp_path, retention_ms=DAY)
    _fill_segments(log, 4)
    end = log.log_end_offset
    assert log.enforce_retention(NOW + DAY) == 0
    assert log.enforce_retention(NOW + DAY + 10) == 3
    assert log.segment_count == 1 and log.log_end_offset == end
    assert log.log_start_offset == log.local_log_start_offset == _segments(log)[0][0]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_retention_by_time_stops_at_the_first_young_segment(tmp_path):
    log = _log(tmp_path, retention_ms=DAY)
    _fill_segments(log, 2, NOW)
    _fill_segments(log, 3, NOW + DAY)
    _fill_segments(log, 4, NOW)
    assert log.enforce_retention(NOW + DAY + 10) == 1


def test_retention_by_bytes(tmp_path):
    log = _log(tmp_path, retention_bytes=9000, retention_ms=-1)
    _fill_segments(log, 6)
    sizes = [s.size for s in log.segment_infos()]
    deleted = log.enforce_retention(NOW)
    kept = sum(sizes[deleted:])
    assert kept >= 9000 and kept - sizes[deleted] < 9000
    assert offsets_in(read_all(log))[-1] == log.log_end_offset - 1


def test_retention_respects_the_high_watermark(tmp_path):
    log = _log(tmp_path, retention_ms=1)
    _fill_segments(log, 4)
    bases = [b for b, _ in _segments(log)]
    assert log.enforce_retention(NOW + DAY, high_watermark=bases[2] - 1) == 1
    assert log.enforce_retention(NOW + DAY, high_watermark=bases[3]) == 2


def test_compact_only_topics_keep_data_but_honour_log_start(tmp_path):
    log = _log(tmp_path, retention_ms=1, cleanup_policy="compact")
    _fill_segments(log, 3)
    assert log.enforce_retention(NOW + DAY) == 0
    log.increment_log_start_offset(_segments(log)[1][1])
    assert log.enforce_retention(NOW + DAY) == 2


def test_tiered_local_retention_only_deletes_uploaded_segments(tmp_path):
    log = _log(tmp_path, remote_storage_enable="true", local_retention_ms=1000, retention_ms=DAY)
    _fill_segments(log, 4)
    segments = _segments(log)
    assert log.enforce_retention(NOW + 5000) == 0
    log.highest_offset_in_remote_storage.set(segments[1][1] - 1)
    assert log.enforce_retention(NOW + 5000) == 2
    assert log.log_start_offset == 0 and log.local_log_start_offset == segments[2][0]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_deleted_segments_stay_readable_until_the_delay(tmp_path):
    log = _log(tmp_path, retention_ms=1, file_delete_delay_ms=5000)
    _fill_segments(log, 2)
    region = log.read(0, 100).parts[0]
    before = region.read()
    first = log.segment_infos()[0]
    assert log.enforce_retention(NOW + DAY) == 1
    assert not first.log_path.exists()
    assert first.log_path.with_name(first.log_path.name + ".deleted").exists()
    log.tick(NOW + DAY + 4999)
    assert region.read() == before
    log.tick(NOW + DAY + 5000)
    assert not first.log_path.with_name(first.log_path.name + ".deleted").exists()
    assert sorted(p.suffix for p in log.directory.glob("0*")) == [".index", ".log", ".snapshot", ".timeindex"]


# --- truncation ----------------------------------------------------------------------------------


def test_truncate_to_within_and_across_segments(tmp_path):
    log = _log(tmp_path)
    log.append(batch(3), 1, NOW)
    _fill_segments(log, 3, epoch=1)
    log.append(batch(3), 2, NOW)
    end = log.log_end_offset
    assert not log.truncate_to(end)
    assert log.truncate_to(end - 3)
    assert log.log_end_offset == end - 3 and log.epoch_entries() == [(1, 0)]
    second_base = _segments(log)[1][0]
    assert log.truncate_to(second_base + 1)
    assert log.log_end_offset == second_base  # a batch is dropped whole
    assert offsets_in(read_all(log)) == list(range(second_base))
    assert log.recovery_point <= second_base
    result = log.append(batch(2), 5, NOW)
    assert result.base_offset == second_base
    assert log.end_offset_for_epoch(5) == (5, second_base + 2)


def test_truncate_drops_epochs_and_survives_reopen(tmp_path):
    log = _log(tmp_path)
    log.append(batch(3), 1, NOW)
    log.append(batch(3), 2, NOW)
    log.append(batch(3), 3, NOW)
    log.truncate_to(4)
    assert log.log_end_offset == 3 and log.epoch_entries() == [(1, 0)]
    log.close()
    reopened = Log.open(log.directory, config(), NOW)
    assert reopened.log_end_offset == 3 and reopened.epoch_entries() == [(1, 0)]


def test_truncate_fully_and_start_at(tmp_path):
    log = _log(tmp_path)
    _fill_segments(log, 3)
    log.truncate_fully_and_start_at(1000, log_start_offset=400)
    assert (log.log_start_offset, log.local_log_start_offset, log.log_end_offset) == (400, 1000, 1000)
    assert log.epoch_entries() == []
    assert log.append(batch(2), 7, NOW).base_offset == 1000
    assert log.truncate_to(500)  # below the first local offset: start over there
    assert (log.log_end_offset, log.local_log_start_offset) == (500, 500)


def test_increment_log_start_offset(tmp_path):
    log = _log(tmp_path)
    log.append(batch(5), 1, NOW)
    log.append(batch(5), 2, NOW)
    assert log.increment_log_start_offset(7) and not log.increment_log_start_offset(3)
    assert log.epoch_entries() == [(2, 7)]
    assert offsets_in(log.read(7, 10_000).to_bytes())[0] == 5  # whole batch holding 7
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.increment_log_start_offset(11)


def test_update_config_changes_rolling(tmp_path):
    log = _log(tmp_path)
    log.append(batch(3), 0, NOW)
    log.update_config(config(segment_ms=1))
    log.append(batch(3, NOW + 10), 0, NOW + 10)
    assert log.segment_count == 2
    assert os.path.exists(log.segment_infos()[1].log_path)


def test_a_rolled_segment_is_flushed_by_the_next_tick(tmp_path):
    log = _log(tmp_path)
    _fill_segments(log, 2)
    rolled_at = _segments(log)[1][0]
    assert log.recovery_point == 0
    log.tick(NOW)
    assert log.recovery_point == rolled_at
    log.tick(NOW)
    assert log.recovery_point == rolled_at  # the active segment waits for flush.ms / flush()


def test_segment_jitter_is_deterministic_per_directory_and_bounded(tmp_path):
    rolls = []
    for name in ("a-0", "a-0", "b-0"):
        log = Log.open(tmp_path / name, config(segment_ms=1000, segment_jitter_ms=900), NOW)
        log.truncate_fully_and_start_at(0)
        times = []
        for step in range(0, 1100, 50):
            before = log.segment_count
            log.append(batch(1, NOW + step), 0, NOW + step)
            if log.segment_count > before:
                times.append(step)
                break
        rolls.append(times)
        log.close()
    assert rolls[0] == rolls[1] and rolls[0] and 100 <= rolls[0][0] <= 1050


def test_a_tiered_log_reloaded_before_its_config_is_known_keeps_its_log_start(tmp_path):
    """A broker loads its logs with the default config, before the metadata says a topic is tiered:
    a log start below the first local segment (older data in remote storage) must survive that,
    or remote retention would delete the remote segments below the raised start."""
    tiered = config(remote_storage_enable="true", local_retention_bytes=1)
    log = Log.open(tmp_path / "t-0", tiered, NOW)
    for _ in range(40):
        log.append(batch(3), 0, NOW)
    log.highest_offset_in_remote_storage.set(log.rolled_segments()[-1].next_offset - 1)
    log.enforce_retention(NOW)
    first_local = log.local_log_start_offset
    assert first_local > 0 and log.log_start_offset == 0
    log.close()
    reopened = Log.open(tmp_path / "t-0", config(), NOW, log_start_offset=0)      # defaults: not tiered
    assert reopened.log_start_offset == 0 and reopened.epoch_entries()[0] == (0, 0)
    reopened.update_config(tiered)                                                # the metadata arrives
    assert reopened.log_start_offset == 0
    reopened.update_config(config())                                              # a topic that is not tiered
    assert reopened.log_start_offset == first_local == reopened.epoch_entries()[0][1]
    reopened.close()


# --- fetch regions outlive the log's descriptors ----------------------------------------------------


@pytest.mark.parametrize("close", ["close_handlers", "delete", "close"])
def test_region_read_after_its_log_closed_gives_its_own_bytes(tmp_path, close):
    """A Fetch answer's regions are sent after the handler returned; the log may close meanwhile
    (dir offline, replica deleted, shutdown). The region still reads its segment's bytes, never
    another file's that reused the descriptor number (the nemesis soak's EBADF)."""
    log = _log(tmp_path)
    log.append(batch(5, NOW), 0, NOW)
    result = log.read(0, 1 << 20)
    expected = result.to_bytes()
    getattr(log, close)()
    others = [os.open(tmp_path / f"other-{i}", os.O_RDWR | os.O_CREAT, 0o644) for i in range(4)]
    try:
        for fd in others:
            os.pwrite(fd, b"\xee" * len(expected), 0)
        assert result.to_bytes() == expected
    finally:
        for fd in others:
            os.close(fd)
    del result
