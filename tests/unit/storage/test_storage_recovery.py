"""Crash recovery: torn tails, corrupt bytes, garbage, broken indexes and epochs, kill -9."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from storage_helpers import NOW, batch, config, offsets_in, read_all

from tierlog.records import validate
from tierlog.storage import Log


def _crash(log: Log) -> None:
    """Drop the log as a kill -9 would: close descriptors, write nothing more."""
    for segment in log._segments:
        segment.close_fd()


def _build(tmp_path, batches=12, flush_after=None, **props):
    log = Log.open(tmp_path / "t-0", config(**props), NOW)
    for i in range(batches):
        log.append(batch(3, NOW + i, value_size=200), i // 4, NOW + i)
        if flush_after is not None and i + 1 == flush_after:
            log.flush(NOW)
    return log


def _reopen(log: Log, recovery_point=None, **props) -> Log:
    return Log.open(log.directory, config(**props), NOW, recovery_point=recovery_point)


def _last_log_file(log: Log):
    return log.segment_infos()[-1].log_path


def _assert_clean(log: Log, end: int) -> None:
    data = read_all(log)
    validate(data)
    assert offsets_in(data) == list(range(log.log_start_offset, end))
    assert log.log_end_offset == end == log.recovery_point


@pytest.mark.parametrize("cut", [1, 30, 61, 100])
def test_torn_tail_is_cut_at_the_last_whole_batch(tmp_path, cut):
    log = _build(tmp_path)
    end = log.log_end_offset
    _crash(log)
    path = _last_log_file(log)
    os.truncate(path, os.path.getsize(path) - cut)
    recovered = _reopen(log)
    _assert_clean(recovered, end - 3)
    assert recovered.append(batch(2), 9, NOW).base_offset == end - 3


def test_flipped_byte_in_last_batch(tmp_path):
    log = _build(tmp_path)
    end = log.log_end_offset
    _crash(log)
    path = _last_log_file(log)
    with open(path, "r+b") as handle:
        handle.seek(os.path.getsize(path) - 5)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x40]))
    _assert_clean(_reopen(log), end - 3)


def test_garbage_after_the_last_batch(tmp_path):
    log = _build(tmp_path)
    end = log.log_end_offset
    _crash(log)
    path = _last_log_file(log)
    size = os.path.getsize(path)
    with open(path, "ab") as handle:
        handle.write(os.urandom(500))
    recovered = _reopen(log)
    _assert_clean(recovered, end)
    assert os.path.getsize(path) == size


def test_corruption_in_an_unflushed_middle_segment_drops_later_segments(tmp_path):
    log = _build(tmp_path, batches=30)
    assert log.segment_count >= 3
    second = log.segment_infos()[1]
    _crash(log)
    with open(second.log_path, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff\xff\xff")
    recovered = _reopen(log)
    assert recovered.segment_count == 2
    _assert_clean(recovered, recovered.log_end_offset)
    assert second.base_offset <= recovered.log_end_offset < second.next_offset


def test_flushed_batches_survive_when_recovering_from_the_recovery_point(tmp_path):
    log = _build(tmp_path, batches=30, flush_after=20)
    flushed = log.recovery_point
    assert flushed == 60
    _crash(log)
    infos = log.segment_infos()
    os.truncate(infos[-1].log_path, 0)  # everything unflushed in the active segment is lost
    recovered = _reopen(log, recovery_point=flushed)
    assert recovered.log_end_offset >= flushed
    assert offsets_in(read_all(recovered))[:flushed] == list(range(flushed))


def test_broken_or_missing_indexes_are_rebuilt(tmp_path):
    log = _build(tmp_path, batches=30, index_interval_bytes=100)
    expected = read_all(log)
    middle = log.read(40, 100).to_bytes()
    infos = log.segment_infos()
    log.close()
    infos[0].index_path.write_bytes(b"\x00\x00\x00\x09\x00\x00\xff\xff\x00")  # bad size
    infos[1].index_path.write_bytes(bytes.fromhex("0000000500000010" "0000000300000020"))  # decreasing
    infos[-1].index_path.unlink()
    infos[-1].time_index_path.unlink()
    reopened = Log.open(log.directory, config(index_interval_bytes=100), NOW, clean_shutdown=True)
    assert read_all(reopened) == expected
    assert reopened.read(40, 100).to_bytes() == middle
    assert reopened.log_end_offset == 90
    reopened.close()
    assert os.path.getsize(infos[0].index_path) % 8 == 0


def test_epoch_cache_is_truncated_to_the_recovered_end(tmp_path):
    log = _build(tmp_path, batches=12)  # epochs 0, 1, 2 at offsets 0, 12, 24
    _crash(log)
    last = log.segment_infos()[-1]
    os.truncate(last.log_path, 0)
    recovered = _reopen(log)
    end = recovered.log_end_offset
    assert all(start < end for _epoch, start in recovered.epoch_entries())
    assert recovered.end_offset_for_epoch(recovered.latest_epoch) == (recovered.latest_epoch, end)


def test_corrupt_epoch_checkpoint_is_rebuilt_from_batches(tmp_path):
    log = _build(tmp_path, batches=12)
    log.close()
    (log.directory / "leader-epoch-checkpoint").write_text("0\n5\n1 2\n")
    reopened = Log.open(log.directory, config(), NOW, clean_shutdown=True)
    assert reopened.epoch_entries() == [(0, 0), (1, 12), (2, 24)]


def test_leftover_deleted_and_tmp_files_are_removed(tmp_path):
    log = _build(tmp_path, batches=3)
    log.close()
    (log.directory / "00000000000000000000.log.deleted").write_bytes(b"x")
    (log.directory / "leader-epoch-checkpoint.tmp").write_bytes(b"x")
    (log.directory / "00000000000000099999.index").write_bytes(b"")
    Log.open(log.directory, config(), NOW).close()
    names = sorted(p.name for p in log.directory.iterdir())
    assert names == ["00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex",
                     "00000000000000000009.snapshot", "leader-epoch-checkpoint"]


_CHILD = textwrap.dedent("""
    from pathlib import Path
    from storage_helpers import NOW, batch, config
    from tierlog.storage import LogManager
    manager = LogManager([Path({log_dir!r})], NOW)
    log = manager.create("crash", 0, None, config(), NOW)
    i = 0
    while True:
        log.append(batch(3, NOW + i, value_size=100), 1, NOW + i)
        i += 1
        if i % 7 == 0:
            manager.flush_all(NOW + i)
            print(log.recovery_point, flush=True)
""")


@pytest.mark.parametrize("kills", [1, 2])
def test_kill_9_keeps_every_flushed_batch(tmp_path, kills):
    from tierlog.storage import LogManager

    helpers = os.path.dirname(os.path.abspath(__file__))     # storage_helpers.py, for the child
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (helpers, os.environ.get("PYTHONPATH")) if p)}
    log_dir = tmp_path / "logs"
    flushed = 0
    for round_ in range(kills):
        script = _CHILD.format(log_dir=str(log_dir))
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
        try:
            lines = [int(child.stdout.readline()) for _ in range(15 + round_ * 5)]
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert lines == sorted(lines)
        flushed = lines[-1]
        manager = LogManager([log_dir], NOW)
        log = manager.get("crash", 0)
        assert log is not None and log.log_end_offset >= flushed
        data = read_all(log)
        validate(data)
        assert offsets_in(data) == list(range(log.log_end_offset))
        manager.close()
    assert flushed > 0


def test_epochs_written_by_flushes_and_recovered_past_the_recovery_point(tmp_path):
    """A new epoch reaches the checkpoint with the next flush, not at once; a crash loses
    only entries past the recovery point, and recovery re-adds them from the batches."""
    log = _build(tmp_path, batches=6, flush_after=4)   # epoch 0 from 0 (flushed), epoch 1 from 12 (not)
    flushed = log.recovery_point
    log.append(batch(3, NOW, value_size=200), 5, NOW)   # epoch 5 from offset 18, not flushed
    log.assign_epoch_start_offset(7, log.log_end_offset)  # a new leader's epoch, no batch yet
    assert log.epoch_entries() == [(0, 0), (1, 12), (5, 18), (7, 21)]
    _crash(log)
    recovered = _reopen(log, recovery_point=flushed)
    assert recovered.epoch_entries() == [(0, 0), (1, 12), (5, 18)]
    assert recovered.log_end_offset == 21
