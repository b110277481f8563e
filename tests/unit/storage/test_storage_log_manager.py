"""LogManager: create / get / delete, checkpoints, clean shutdown, periodic work."""

import os

import pytest
from storage_helpers import NOW, batch, config, offsets_in, read_all

from tierlog.storage import (
    CLEAN_SHUTDOWN_FILE,
    InconsistentTopicIdError,
    KafkaStorageError,
    LogManager,
)
from tierlog.storage.checkpoint import read_offsets

TOPIC_ID = bytes(range(16))


def test_create_get_spread_over_dirs(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, NOW)
    logs = [manager.create("orders", p, TOPIC_ID, config(), NOW) for p in range(4)]
    assert manager.get("orders", 2) is logs[2] and manager.get("orders", 9) is None
    assert manager.create("orders", 1, TOPIC_ID, config(), NOW) is logs[1]
    homes = [manager.log_dir_of("orders", p) for p in range(4)]
    assert sorted(homes) == sorted(dirs * 2)
    assert (homes[0] / "orders-0" / "partition.metadata").exists()
    assert set(manager.logs()) == {("orders", p) for p in range(4)}
    with pytest.raises(InconsistentTopicIdError):
        manager.create("orders", 0, b"\x07" * 16, config(), NOW)
    manager.close()


def test_restart_after_clean_shutdown_reads_checkpoints(tmp_path):
    manager = LogManager([tmp_path], NOW)
    log = manager.create("t", 0, TOPIC_ID, config(), NOW)
    for _ in range(10):
        log.append(batch(3), 0, NOW)
    log.increment_log_start_offset(6)
    manager.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 30\n"
    assert read_offsets(tmp_path / "log-start-offset-checkpoint") == {("t", 0): 6}
    again = LogManager([tmp_path], NOW)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    log = again.get("t", 0)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (6, 30, 30)
    assert log.topic_id == TOPIC_ID
    assert offsets_in(read_all(log)) == list(range(6, 30))
    again.close()


def test_delete_renames_then_removes_after_the_delay(tmp_path):
    manager = LogManager([tmp_path], NOW)
    log = manager.create("gone", 3, TOPIC_ID, config(file_delete_delay_ms=1000), NOW)
    log.append(batch(2), 0, NOW)
    region = log.read(0, 1000).parts[0]
    content = region.read()
    assert manager.delete("gone", 3, NOW)
    assert not manager.delete("gone", 3, NOW)
    assert manager.get("gone", 3) is None
    (renamed,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert renamed.name.startswith("gone-3.") and renamed.name.endswith("-delete")
    assert len(renamed.name) == len("gone-3.") + 32 + len("-delete")
    manager.tick(NOW + 999)
    assert renamed.exists() and region.read() == content
    manager.tick(NOW + 1000)
    assert not renamed.exists()
    manager.close()


def test_startup_removes_leftover_delete_dirs_and_skips_foreign_entries(tmp_path):
    (tmp_path / "x-0.0123456789abcdef0123456789abcdef-delete").mkdir()
    (tmp_path / "not a partition").mkdir()
    (tmp_path / "meta.properties").write_text("node.id=1\n")
    manager = LogManager([tmp_path], NOW)
    assert manager.logs() == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "log-start-offset-checkpoint", "meta.properties", "not a partition", "recovery-point-offset-checkpoint"]
    manager.close()


def test_tick_runs_retention_per_interval_and_checkpoints(tmp_path):
    manager = LogManager([tmp_path], NOW, retention_check_interval_ms=1000, checkpoint_interval_ms=500,
                         config_for=lambda topic: config(retention_ms=10))
    log = manager.create("r", 0, None, config(retention_ms=10), NOW)
    while log.segment_count < 3:
        log.append(batch(3, value_size=300), 0, NOW)
    log.flush(NOW)
    manager.tick(NOW + 999)
    manager.wait_for_writes()     # checkpoints are written on the log dir's writer thread
    assert log.segment_count == 3
    assert read_offsets(tmp_path / "recovery-point-offset-checkpoint") == {("r", 0): log.log_end_offset}
    manager.tick(NOW + 1000)
    assert log.segment_count == 1 and log.log_start_offset > 0
    manager.close()
    again = LogManager([tmp_path], NOW, config_for=lambda topic: config(retention_ms=10))
    assert again.get("r", 0).log_start_offset == log.log_start_offset
    again.close()


def test_unclean_restart_recovers_from_the_checkpointed_recovery_point(tmp_path):
    manager = LogManager([tmp_path], NOW)
    log = manager.create("u", 0, None, config(), NOW)
    for _ in range(30):
        log.append(batch(3, value_size=200), 0, NOW)
    manager.flush_all(NOW)
    flushed = log.recovery_point
    for _ in range(3):
        log.append(batch(3, value_size=200), 0, NOW)
    for segment in log._segments:  # crash: nothing more reaches the disk
        segment.close_fd()
    active = log.segment_infos()[-1].log_path
    os.truncate(active, os.path.getsize(active) - 7)
    again = LogManager([tmp_path], NOW)
    recovered = again.get("u", 0)
    assert recovered.log_end_offset == flushed + 6
    assert offsets_in(read_all(recovered)) == list(range(flushed + 6))
    again.close()


def test_an_unreadable_log_dir_goes_offline_alone(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    manager = LogManager([good, bad], NOW)
    manager.create("t", 0, None, config(), NOW)
    manager.create("t", 1, None, config(), NOW)
    manager.close()
    bad_partition = next(p for p in bad.iterdir() if p.is_dir())
    (bad_partition / "00000000000000000000.log").chmod(0)
    (bad_partition / "00000000000000000000.log").unlink()
    os.mkdir(bad_partition / "00000000000000000000.log")  # a directory where a segment file belongs
    again = LogManager([good, bad], NOW)
    assert again.offline_dirs == {bad}
    assert len(again.logs()) == 1
    assert again.create("t", 7, None, config(), NOW) is again.get("t", 7)
    assert again.log_dir_of("t", 7) == good
    again.close()


def test_reserved_dir_is_never_a_partition_log(tmp_path):
    """Whatever name maps there, a reserved directory (the Raft metadata log's) is not the manager's."""
    reserved = tmp_path / "data" / "__cluster_metadata-0"
    reserved.mkdir(parents=True)
    (reserved / "raft-log-start").write_text("{}")
    manager = LogManager([tmp_path / "data"], NOW, reserved_dirs=[tmp_path / "data" / ".." / "data" /
                                                                   "__cluster_metadata-0"])
    with pytest.raises(KafkaStorageError, match="reserved"):
        manager.create("__cluster_metadata", 0, TOPIC_ID, config(), NOW)
    assert manager.get("__cluster_metadata", 0) is None and not manager.delete("__cluster_metadata", 0)
    manager.close()
    assert sorted(p.name for p in reserved.iterdir()) == ["raft-log-start"]


def _record_fsyncs(monkeypatch) -> list[tuple[str, str]]:
    """(thread name, path) of every os.fsync from now on."""
    import threading
    real, synced = os.fsync, []

    def fsync(fd):
        synced.append((threading.current_thread().name, os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_a_new_log_is_synced_by_the_writer_not_the_caller(tmp_path, monkeypatch):
    manager = LogManager([tmp_path], NOW)
    synced = _record_fsyncs(monkeypatch)
    logs = [manager.create("t", p, TOPIC_ID, config(), NOW) for p in (0, 1)]
    manager.wait_for_writes()
    assert all(thread.startswith("log-writer") for thread, _ in synced), synced
    paths = {path for _, path in synced}
    for p in (0, 1):
        assert {str(tmp_path / f"t-{p}"), str(tmp_path / f"t-{p}" / "partition.metadata")} <= paths
    assert str(tmp_path) in paths and not manager.offline_dirs
    assert not (tmp_path / "t-0" / "leader-epoch-checkpoint").exists()    # an empty log's: left to its flush
    logs[0].assign_epoch_start_offset(3, 0)
    logs[0].flush(NOW)
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n3 0\n"
    manager.close()


def test_a_log_deleted_before_its_sync_leaves_the_dir_online(tmp_path):
    manager = LogManager([tmp_path], NOW)
    manager._writers[tmp_path].submit(lambda: __import__("time").sleep(0.2))   # hold the writer back
    manager.create("t", 0, TOPIC_ID, config(), NOW)
    manager.delete("t", 0, NOW)
    manager.wait_for_writes()
    assert not manager.offline_dirs
    manager.close()


def test_files_a_crash_left_empty_read_as_absent(tmp_path):
    """What a machine crash before the creation sync can leave: empty files, read as absent."""
    manager = LogManager([tmp_path], NOW)
    manager.create("t", 0, TOPIC_ID, config(), NOW).append(batch(3), 0, NOW)
    manager.close()
    os.remove(tmp_path / CLEAN_SHUTDOWN_FILE)
    for name in ("partition.metadata", "leader-epoch-checkpoint"):
        (tmp_path / "t-0" / name).write_bytes(b"")
    manager = LogManager([tmp_path], NOW)
    log = manager.create("t", 0, TOPIC_ID, config(), NOW)
    assert log.topic_id == TOPIC_ID and offsets_in(read_all(log)) == [0, 1, 2] and not manager.offline_dirs
    manager.close()
def test_an_append_that_hits_enospc_takes_its_dir_offline_at_the_next_tick(tmp_path, monkeypatch):
    import errno

    from tierlog.storage.segment import LogSegment
    good, full = tmp_path / "good", tmp_path / "full"
    told = []
    manager = LogManager([good, full], NOW, on_dir_offline=told.append)
    logs = {p: manager.create("t", p, None, config(), NOW) for p in range(2)}
    victim = next(p for p in logs if manager.log_dir_of("t", p) == full)
    survivor = logs[1 - victim]

    def no_space(self, data, headers):
        raise OSError(errno.ENOSPC, "No space left on device")
    with monkeypatch.context() as m:
        m.setattr(LogSegment, "append", no_space)
        with pytest.raises(KafkaStorageError, match="No space left"):
            logs[victim].append(batch(), 0, NOW)
    assert manager.failures.has_failed(full) and told == []      # reported, not yet acted on
    manager.tick(NOW + 1)
    assert told == [full] and manager.offline_dirs == {full}
    assert manager.get("t", victim) is None and manager.get("t", 1 - victim) is survivor
    survivor.append(batch(), 0, NOW)                               # the other dir keeps working
    assert manager.create("t", 5, None, config(), NOW) is manager.get("t", 5)
    assert manager.log_dir_of("t", 5) == good                      # nothing new goes to the failed dir
    manager.tick(NOW + 2)
    assert told == [full]                                          # told once
    manager.close()
    assert (good / CLEAN_SHUTDOWN_FILE).exists() and not (full / CLEAN_SHUTDOWN_FILE).exists()


def test_a_tiered_log_killed_before_its_first_log_start_checkpoint_keeps_its_remote_offsets(tmp_path):
    """The nemesis soak's data loss (issue 40): a broker killed -9 (or stopped by a full log dir)
    before its first log-start-offset checkpoint (written every 60 s) that names a tiered log whose
    local retention had deleted the first segment reloaded it with the log start at its first
    local segment; as leader, its remote expiration then deleted the remote segments below that
    (acknowledged records gone, and the lost-object fault's segments stopped being listed).  With
    no checkpointed start the log starts at 0, as in Kafka (LogManager's getOrElse(tp, 0L)); the
    config the metadata brings raises it for a topic that is not tiered."""
    tiered = config(remote_storage_enable="true", local_retention_bytes=1)
    manager = LogManager([tmp_path], NOW)
    log = manager.create("tiered", 0, TOPIC_ID, tiered, NOW)
    plain = manager.create("plain", 0, TOPIC_ID, config(retention_bytes=1), NOW)
    for _ in range(40):
        log.append(batch(3), 0, NOW)
        plain.append(batch(3), 0, NOW)
    log.highest_offset_in_remote_storage.set(log.rolled_segments()[-1].next_offset - 1)
    log.enforce_retention(NOW)
    plain.enforce_retention(NOW)
    first_local, plain_first = log.local_log_start_offset, plain.log_start_offset
    assert first_local > 0 and log.log_start_offset == 0 and plain_first > 0
    manager.flush_all(NOW)
    (tmp_path / "log-start-offset-checkpoint").unlink()     # killed before the first periodic write
    for segment in log._segments + plain._segments:
        segment.close_fd()
    again = LogManager([tmp_path], NOW)
    reloaded = again.get("tiered", 0)
    assert reloaded.log_start_offset == 0 and reloaded.epoch_entries()[0] == (0, 0)
    reloaded.update_config(tiered)                           # the metadata arrives
    assert reloaded.log_start_offset == 0 and reloaded.local_log_start_offset == first_local
    untiered = again.get("plain", 0)
    untiered.update_config(config(retention_bytes=1))
    assert untiered.log_start_offset == plain_first == untiered.epoch_entries()[0][1]
    again.close()
