"""The log cleaner over real segment files: compaction results, tombstone removal after
delete.retention.ms, the checkpoint file, swaps refused when the log moved on, appends
and reads during cleans, and recovery from a crash at every step of a swap."""

import os
import threading

import pytest
from storage_helpers import NOW, config, read_all

from tierlog.records import (
    INVALID_RECORD,
    InvalidRecordError,
    Record,
    build_batch,
    decode_batches,
)
from tierlog.storage import Log, LogManager
from tierlog.storage.checkpoint import read_offsets
from tierlog.storage.cleaner_pass import _clean_group
from tierlog.storage.cleaner_rules import OffsetMap
from tierlog.storage.cleaner_threads import (
    CLEANER_OFFSET_CHECKPOINT,
    CleanerConfig,
    LogDirCleaner,
)
from tierlog.storage.files import CLEANED_SUFFIX, SWAP_SUFFIX

KEY = ("c", 0)
RETENTION = 60_000


def _log(tmp_path, **props) -> Log:
    props = {"cleanup_policy": "compact", "min_cleanable_dirty_ratio": "0.01", "delete_retention_ms": RETENTION,
             **props}
    return Log.open(tmp_path / "c-0", config(**props), NOW)


def _put(log: Log, key: bytes, value: bytes | None, now=NOW) -> int:
    return log.append(bytearray(build_batch([Record(0, now, key, value)])), 0, now).base_offset


def _cleaner(tmp_path, log: Log, limit=None) -> LogDirCleaner:
    return LogDirCleaner(tmp_path, lambda: {KEY: log}, lambda keys: dict.fromkeys(keys, limit), CleanerConfig(backoff_ms=10),
                         lambda: NOW, 1 << 20)


def _records(log: Log) -> list[Record]:
    return [r for _h, records in decode_batches(read_all(log)) for r in records]


def _view(records) -> dict:
    """What a consumer reading from the start ends with: the latest value per key."""
    out = {}
    for record in records:
        if record.value is None:
            out.pop(record.key, None)
        else:
            out[record.key] = record.value
    return out


def _fill(log: Log, updates: int, keys: int = 5) -> dict:
    expected = {}
    for i in range(updates):
        key, value = b"k%d" % (i % keys), b"v%d-" % i + b"x" * 30
        _put(log, key, value)
        expected[key] = value
    return expected


def _below(records, offset):
    return [r for r in records if r.offset < offset]


def test_clean_keeps_the_latest_value_per_key_below_the_active_segment(tmp_path):
    log = _log(tmp_path)
    expected = _fill(log, 600)
    before = log.size_in_bytes
    active_base = log.segment_infos()[-1].base_offset
    cleaner = _cleaner(tmp_path, log)
    assert cleaner.clean_once(NOW)
    records = _records(log)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    cleaned = _below(records, active_base)
    assert len({r.key for r in cleaned}) == len(cleaned) <= 5      # one record per key below the active segment
    assert _view(records) == expected
    assert log.size_in_bytes < before / 2
    assert read_offsets(tmp_path / CLEANER_OFFSET_CHECKPOINT) == {KEY: active_base}
    assert not cleaner.clean_once(NOW)                             # nothing dirty left to clean
    assert log.log_end_offset == 600


def test_the_high_watermark_limit_keeps_segments_at_or_above_it_untouched(tmp_path):
    log = _log(tmp_path)
    _fill(log, 600)
    bases = [s.base_offset for s in log.segment_infos()]
    limit = bases[2] + 1                                            # inside the third segment
    assert _cleaner(tmp_path, log, limit).clean_once(NOW)
    records = _records(log)
    assert [r.offset for r in records if r.offset >= bases[2]] == list(range(bases[2], 600))
    assert len(_below(records, bases[2])) <= 5


def test_a_tombstone_stays_delete_retention_ms_after_its_first_clean_then_goes(tmp_path):
    log = _log(tmp_path)
    expected = _fill(log, 300)
    tombstone = _put(log, b"k1", None)
    del expected[b"k1"]
    expected.update(_fill(log, 300, keys=1))      # k0 only, so the segment holding the tombstone rolls
    cleaner = _cleaner(tmp_path, log)
    assert cleaner.clean_once(NOW)
    records = _records(log)
    held = [r for r in records if r.offset == tombstone]
    assert held and held[0].value is None, "the tombstone survives its first clean"
    horizon_headers = [h for h, rs in decode_batches(read_all(log)) if any(r.offset == tombstone for r in rs)]
    assert horizon_headers[0].has_delete_horizon and horizon_headers[0].base_timestamp == NOW + RETENTION
    expected.update(_fill(log, 200, keys=1))                         # more dirty data, so another clean runs
    assert cleaner.clean_once(NOW + RETENTION - 1)
    assert any(r.offset == tombstone for r in _records(log)), "still before the horizon"
    expected.update(_fill(log, 200, keys=1))
    assert cleaner.clean_once(NOW + RETENTION)
    records = _records(log)
    assert not any(r.offset == tombstone for r in records)
    assert _view(records) == expected
    assert all(r.value is not None for r in records)


def test_a_swap_is_refused_after_a_truncation_and_leaves_no_files(tmp_path):
    log = _log(tmp_path)
    _fill(log, 600)
    view = log.cleaning_view()
    group = list(zip(view.segments[:2], view.sizes[:2], strict=True))
    offset_map = OffsetMap(1000)
    cleaned, _aborted = _clean_group(log, group, offset_map, NOW, view, 4096)
    log.truncate_to(view.segments[1].base_offset + 3)
    assert not log.replace_segments(cleaned, [s for s, _ in group], view.truncations)
    cleaned.delete_files()
    assert not [n for n in os.listdir(log.directory) if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]
    assert [r.offset for r in _records(log)] == list(range(view.segments[1].base_offset + 3))


def test_appends_and_reads_go_on_while_the_cleaner_thread_runs(tmp_path):
    log = _log(tmp_path)
    cleaner = _cleaner(tmp_path, log)
    cleaner.start()
    expected, errors = {}, []
    try:
        for i in range(3000):
            key, value = b"k%d" % (i % 7), b"v%d" % i + b"y" * 40
            _put(log, key, value)
            expected[key] = value
            if i % 100 == 0:
                records = _records(log)
                offsets = [r.offset for r in records]
                if offsets != sorted(set(offsets)):
                    errors.append(i)
        deadline = threading.Event()
        for _ in range(200):
            if cleaner.cleans >= 2:
                break
            cleaner.wake()
            deadline.wait(0.05)
    finally:
        cleaner.stop()
    assert not errors
    assert cleaner.cleans >= 2
    records = _records(log)
    assert _view(records) == expected
    assert log.log_end_offset == 3000


# --- crash at every step of a swap -----------------------------------------------------------------

class _Crash(Exception):
    pass


def _swap_with_crash(monkeypatch, log: Log, replaces_allowed: int):
    """Clean the first three segments, and let the swap stop (as a kill -9 would) after
    ``replaces_allowed`` file renames; returns (records before, records of a full clean)."""
    view = log.cleaning_view()
    group = list(zip(view.segments[:3], view.sizes[:3], strict=True))
    offset_map = OffsetMap(1000)
    for _h, records in decode_batches(read_all(log)):
        for r in records:
            if r.offset < view.segments[3].base_offset:
                offset_map.put(r.key, r.offset)
    cleaned, _aborted = _clean_group(log, group, offset_map, NOW, view, 4096)
    real_replace, calls = os.replace, []

    def replace(src, dst):
        if len(calls) >= replaces_allowed:
            raise _Crash
        calls.append((src, dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    try:
        done = log.replace_segments(cleaned, [s for s, _ in group], view.truncations)
    except _Crash:
        done = False
    monkeypatch.setattr(os, "replace", real_replace)
    return done


def _crash_and_reopen(log: Log) -> Log:
    for segment in log._segments + [s for _w, s in log._pending_deletes]:
        segment.close_fd()
    return Log.open(log.directory, log.config, NOW)


@pytest.mark.parametrize("renames", range(16))
def test_a_crash_at_any_point_of_a_swap_recovers_a_valid_log(tmp_path, monkeypatch, renames):
    log = _log(tmp_path)
    expected = _fill(log, 600)
    before = _records(log)
    done = _swap_with_crash(monkeypatch, log, renames)
    assert done == (renames >= 15)      # 3 renames to .swap, 3 x 3 to .deleted, 3 to the plain names
    reopened = _crash_and_reopen(log)
    after = _records(reopened)
    names = os.listdir(reopened.directory)
    assert not [n for n in names if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX, ".deleted"))], names
    offsets = [r.offset for r in after]
    assert offsets == sorted(set(offsets))
    assert _view(after) == expected
    assert reopened.log_end_offset == 600
    if renames < 3:           # the .log was still .cleaned: the swap never happened
        assert after == before
    else:                     # the .swap .log was complete: recovery finishes the swap
        assert len(after) < len(before)
    _put(reopened, b"k0", b"after")
    assert _view(_records(reopened))[b"k0"] == b"after"
    reopened.close()


def test_a_torn_cleaned_file_is_discarded_at_recovery(tmp_path, monkeypatch):
    log = _log(tmp_path)
    expected = _fill(log, 600)
    before = _records(log)
    _swap_with_crash(monkeypatch, log, 0)
    cleaned_log = next(n for n in os.listdir(log.directory) if n.endswith(".log" + CLEANED_SUFFIX))
    os.truncate(log.directory / cleaned_log, 100)
    reopened = _crash_and_reopen(log)
    assert _records(reopened) == before and _view(before) == expected


@pytest.mark.parametrize("compression", [0, 1, 4])
def test_a_compacted_log_rejects_a_batch_with_a_keyless_record(tmp_path, compression):
    log = _log(tmp_path)
    batch = build_batch([Record(0, NOW, b"k", b"v"), Record(1, NOW, None, b"no key"), Record(2, NOW, None, b"x")],
                        compression=compression)
    with pytest.raises(InvalidRecordError) as raised:
        log.append(bytearray(batch), 0, NOW)
    assert raised.value.error_code == INVALID_RECORD
    # KIP-467: every keyless record named by its index in the batch, the message sums them up
    assert [i for i, _ in raised.value.record_errors] == [1, 2]
    assert all(f"without key in topic partition {log.directory.name}." in m for _, m in raised.value.record_errors)
    assert "due to 2 record errors" in raised.value.message
    assert log.log_end_offset == 0
    plain = Log.open(tmp_path / "d-0", config(), NOW)        # cleanup.policy=delete takes it
    assert plain.append(bytearray(batch), 0, NOW).base_offset == 0


def test_the_log_manager_runs_a_cleaner_per_log_dir_and_stops_it_on_close(tmp_path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    compacted = config(cleanup_policy="compact", min_cleanable_dirty_ratio="0.01")
    manager = LogManager(dirs, NOW, config_for=lambda _topic: compacted, cleaner=CleanerConfig(backoff_ms=10),
                         clock_ms=lambda: NOW)
    try:
        assert manager.cleaners == {}          # until the replica manager gives the clean limits
        manager.start_cleaners(lambda keys: {})
        assert set(manager.cleaners) == set(dirs)
        log = manager.create("c", 0, None, compacted, NOW)
        expected = _fill(log, 600)
        home = manager.log_dir_of("c", 0)
        checkpoint = home / CLEANER_OFFSET_CHECKPOINT
        active_base = log.segment_infos()[-1].base_offset
        for _ in range(400):
            manager.cleaners[home].wake()
            if checkpoint.exists() and read_offsets(checkpoint).get(KEY) == active_base:
                break
            threading.Event().wait(0.02)
        assert read_offsets(checkpoint)[KEY] == active_base
        assert _view(_records(log)) == expected
    finally:
        manager.close()
    assert manager.cleaners == {}
    reopened = LogManager(dirs, NOW, config_for=lambda _topic: compacted, cleaner=CleanerConfig(enable=False))
    try:
        reopened.start_cleaners(lambda keys: {})
        assert reopened.cleaners == {}
        assert _view(_records(reopened.get("c", 0))) == expected
    finally:
        reopened.close()
