"""Flushes on a log directory's writer thread (storage.dir_writer, Log.tick with a writer)."""

import threading
from concurrent.futures import Future

from storage_helpers import NOW, batch, config

from tierlog.storage import Log, LogManager
from tierlog.storage import files as files_module  # its os.fsync: every fsync of the flush goes through it
from tierlog.storage.dir_writer import DirWriter

WAIT_S = 10.0


class ManualWriter:
    """A writer whose jobs run only when the test says so (deterministic interleavings)."""

    def __init__(self):
        self.jobs = []

    def submit(self, job, *args) -> Future:
        future = Future()
        self.jobs.append((job, args, future))
        return future

    def run_all(self):
        jobs, self.jobs = self.jobs, []
        for job, args, future in jobs:
            future.set_result(job(*args))


def _rolled_log(tmp_path, writer, **props) -> Log:
    log = Log.open(tmp_path / "t-0", config(**props), NOW, writer=writer)
    while log.segment_count < 2:
        log.append(batch(3, value_size=300), 0, NOW)
    return log


def test_dir_writer_runs_jobs_in_submission_order(tmp_path):
    writer = DirWriter(tmp_path)
    seen, gate = [], threading.Event()
    writer.submit(gate.wait, WAIT_S)
    for i in range(50):
        writer.submit(seen.append, i)
    gate.set()
    writer.drain()
    assert seen == list(range(50))
    writer.close()


def test_a_roll_flush_is_queued_and_moves_the_recovery_point_only_when_done(tmp_path):
    writer = ManualWriter()
    log = _rolled_log(tmp_path, writer)
    rolled_at = log.segment_infos()[-1].base_offset
    log.tick(NOW)
    assert log.recovery_point == 0 and len(writer.jobs) == 1
    log.tick(NOW)                                  # one queued flush per log at a time
    assert len(writer.jobs) == 1
    writer.run_all()
    assert log.recovery_point == rolled_at
    log.close()


def test_appends_proceed_while_the_writer_is_in_fsync(tmp_path, monkeypatch):
    entered, release = threading.Event(), threading.Event()
    real_fsync = files_module.os.fsync

    def slow_fsync(fd):
        entered.set()
        assert release.wait(WAIT_S)
        real_fsync(fd)

    writer = DirWriter(tmp_path)
    log = _rolled_log(tmp_path, writer)
    rolled_at = log.segment_infos()[-1].base_offset
    monkeypatch.setattr(files_module.os, "fsync", slow_fsync)
    log.tick(NOW)
    assert entered.wait(WAIT_S)
    end = log.log_end_offset
    log.append(batch(3), 0, NOW)                   # the log's lock is free during the fsync
    assert log.log_end_offset == end + 3
    assert log.recovery_point == 0                 # not before the fsync returns
    release.set()
    writer.drain()
    assert log.recovery_point == rolled_at
    monkeypatch.undo()
    log.close()
    writer.close()


def test_a_segment_deleted_while_its_flush_is_queued_is_skipped(tmp_path):
    writer = ManualWriter()
    log = _rolled_log(tmp_path, writer, file_delete_delay_ms=0)
    log.tick(NOW)
    assert len(writer.jobs) == 1
    log.truncate_fully_and_start_at(1000)
    log.tick(NOW)                                  # the deleted segments' descriptors close
    writer.run_all()
    assert not log.offline
    assert log.recovery_point == 1000              # the truncation's, not the queued target
    log.close()


def test_a_truncation_during_the_fsync_keeps_the_recovery_point_below_it(tmp_path, monkeypatch):
    entered, release = threading.Event(), threading.Event()
    real_fsync = files_module.os.fsync

    def slow_fsync(fd):
        entered.set()
        assert release.wait(WAIT_S)
        real_fsync(fd)

    writer = DirWriter(tmp_path)
    log = Log.open(tmp_path / "t-0", config(flush_ms=0), NOW, writer=writer)
    for _ in range(4):
        log.append(batch(3), 0, NOW)
    monkeypatch.setattr(files_module.os, "fsync", slow_fsync)
    log.tick(NOW)                                  # flush.ms: a flush to 12 starts
    assert entered.wait(WAIT_S)
    log.truncate_to(6)
    log.append(batch(3), 0, NOW)                   # 6..8, not in that flush
    release.set()
    writer.drain()
    assert log.recovery_point <= 6
    monkeypatch.undo()
    log.close()
    writer.close()


def test_flush_messages_still_flushes_before_the_append_returns(tmp_path):
    writer = ManualWriter()
    log = Log.open(tmp_path / "t-0", config(flush_messages=1), NOW, writer=writer)
    log.append(batch(3), 0, NOW)
    assert log.recovery_point == 3 and not writer.jobs
    log.close()


def test_a_failed_background_flush_takes_the_log_dir_offline(tmp_path, monkeypatch):
    manager = LogManager([tmp_path], NOW)
    log = manager.create("t", 0, None, config(flush_ms=0), NOW)
    log.append(batch(3), 0, NOW)

    def failing_fsync(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(files_module.os, "fsync", failing_fsync)
    manager.tick(NOW + 1)
    manager.wait_for_writes()
    assert log.offline
    monkeypatch.undo()
    manager.tick(NOW + 2)
    assert tmp_path in manager.offline_dirs and manager.get("t", 0) is None
    manager.close()


def test_a_manager_tick_visits_only_the_logs_with_time_driven_work(tmp_path):
    """10,000 idle logs cost a tick nothing: a log is visited while it has a rolled segment to
    flush, files to delete or a finite flush.ms (storage.timed_work), and again once it rolls."""
    manager = LogManager([tmp_path], NOW)
    idle = [manager.create("t", p, None, config(), NOW) for p in range(3)]
    visited = []
    for log in idle:
        real = log.tick_due
        log.tick_due = lambda now, log=log, real=real: visited.append(log) or real(now)
    manager.tick(NOW + 1_000)                   # new logs are looked at once
    assert len(visited) == 3
    visited.clear()
    manager.tick(NOW + 2_000)
    assert visited == []                        # nothing to do: not visited
    rolled = idle[1]
    while rolled.segment_count < 2:
        rolled.append(batch(3, value_size=300), 0, NOW + 2_500)
    manager.tick(NOW + 3_000)
    manager.wait_for_writes()
    assert visited == [rolled] and rolled.recovery_point == rolled.segment_infos()[-1].base_offset
    manager.tick(NOW + 4_000)                   # its flush was still queued at the last tick: one more look
    visited.clear()
    manager.tick(NOW + 5_000)
    assert visited == []
    manager.close()


def test_an_idle_log_reads_the_managers_time_for_its_delayed_deletions(tmp_path):
    """A log that is not ticked still schedules a truncation's file deletion from the manager's
    latest tick, not from its last append (which would delete the files at once)."""
    manager = LogManager([tmp_path], NOW)
    log = manager.create("t", 0, None, config(file_delete_delay_ms=60_000), NOW)
    while log.segment_count < 3:
        log.append(batch(3, value_size=300), 0, NOW)
    for at in (NOW + 1_000, NOW + 2_000):       # the rolls flushed: the log leaves the timed set
        manager.tick(at)
        manager.wait_for_writes()
    manager.tick(NOW + 200_000)                 # minutes later (before a retention check), the log idle
    log.truncate_to(1)
    manager.tick(NOW + 200_001)
    assert any(p.name.endswith(".deleted") for p in (tmp_path / "t-0").iterdir())
    manager.tick(NOW + 260_001)
    assert not any(p.name.endswith(".deleted") for p in (tmp_path / "t-0").iterdir())
    manager.close()
