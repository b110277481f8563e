"""File-backed quorum stores in a real temporary directory."""

from tierlog.raft.file_log import FileLog
from tierlog.raft.file_snapshots import FileSnapshotStore, snapshot_file_name
from tierlog.raft.quorum_store import ElectionState, FileQuorumStateStore
from tierlog.raft.snapshots import SnapshotReader, SnapshotWriter
from tierlog.raft.types import OffsetAndEpoch
from tierlog.storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    read_epoch_entries,
    write_epoch_entries,
)


def _clock():
    return 1_000


def test_snapshot_file_name_is_kafkas():
    assert snapshot_file_name(OffsetAndEpoch(5120793, 2)) == "00000000000005120793-0000000002.checkpoint"


def test_snapshot_write_freeze_read(tmp_path):
    store = FileSnapshotStore(tmp_path)
    sid = OffsetAndEpoch(10, 3)
    w = SnapshotWriter(store.create(sid), 1234, lambda *a: None)
    assert (tmp_path / "00000000000000000010-0000000003.checkpoint.part").exists()
    assert store.list() == []
    w.append([b"a", b"b"])
    w.freeze()
    assert store.list() == [sid]
    assert not list(tmp_path.glob("*.part"))
    reader = SnapshotReader(sid, store.read_all(sid))
    assert list(reader) == [b"a", b"b"]
    assert reader.last_contained_ts_ms == 1234
    assert store.read(sid, 0, 10) == store.read_all(sid)[:10]


def test_crash_before_rename_leaves_part_which_is_removed_at_startup(tmp_path):
    store = FileSnapshotStore(tmp_path)
    w = SnapshotWriter(store.create(OffsetAndEpoch(7, 1)), 0, lambda *a: None)
    w.append([b"x"])
    # the process dies here: no freeze, no close
    assert list(tmp_path.glob("*.checkpoint.part"))
    (tmp_path / "00000000000000000003-0000000001.checkpoint.deleted").write_bytes(b"old")
    reopened = FileSnapshotStore(tmp_path)
    assert reopened.list() == []
    assert not list(tmp_path.glob("*.part")) and not list(tmp_path.glob("*.deleted"))


def test_close_abandons_and_delete_removes(tmp_path):
    store = FileSnapshotStore(tmp_path)
    w = SnapshotWriter(store.create(OffsetAndEpoch(7, 1)), 0, lambda *a: None)
    w.close()
    assert store.list() == [] and not list(tmp_path.iterdir())
    w = SnapshotWriter(store.create(OffsetAndEpoch(8, 1)), 0, lambda *a: None)
    w.freeze()
    store.delete(OffsetAndEpoch(8, 1))
    assert store.list() == [] and not list(tmp_path.iterdir())
    assert store.read(OffsetAndEpoch(8, 1), 0, 1) is None and store.size(OffsetAndEpoch(8, 1)) is None


def test_quorum_state_round_trip(tmp_path):
    store = FileQuorumStateStore(tmp_path, frozenset({1, 2, 3}))
    assert store.read() is None
    for state in (ElectionState(1, voted_id=2), ElectionState(2, leader_id=3), ElectionState(5)):
        store.write(state)
        assert FileQuorumStateStore(tmp_path).read() == state
    assert (tmp_path / "quorum-state").exists()
    assert not (tmp_path / "quorum-state.tmp").exists()


def test_file_log_append_truncate_reopen(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    log = FileLog.open(d, clock_ms=_clock)
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch()) == (0, 0, 0)
    b1 = log.append_as_leader([b"a", b"b"], 1, 10)
    b2 = log.append_as_leader([b"c"], 1, 11, control=True)
    log.append_as_follower([b1.rebased(3).__class__(3, 2, 12, (b"d", b"e"))])
    assert log.end_offset == 5 and log.last_fetched_epoch() == 2
    log.flush()
    assert log.flushed_end_offset == 5
    got = log.read(0, 1 << 20)
    assert [(b.base_offset, b.epoch, b.records, b.control) for b in got] == [
        (0, 1, (b"a", b"b"), False), (2, 1, (b"c",), True), (3, 2, (b"d", b"e"), False)]
    assert b2.control
    assert log.epoch_entries() == [(0, 0), (1, 0), (2, 3)]
    assert log.end_offset_for_epoch(1) == (3, 1)
    assert log.is_batch_boundary(2) and not log.is_batch_boundary(1)
    log.truncate_to(3)
    assert log.end_offset == 3
    log.close()
    log = FileLog.open(d, clock_ms=_clock)
    assert log.end_offset == 3 and log.last_fetched_epoch() == 1
    log.delete_before(2, 1)
    assert (log.start_offset, log.start_epoch) == (2, 1)
    log.close()
    log = FileLog.open(d, clock_ms=_clock)
    assert (log.start_offset, log.start_epoch, log.end_offset) == (2, 1, 3)
    assert [b.base_offset for b in log.read(2, 1 << 20)] == [2]
    log.truncate_fully_and_start_at(40, 4)
    log.close()
    log = FileLog.open(d, clock_ms=_clock)
    assert (log.start_offset, log.start_epoch, log.end_offset, log.last_fetched_epoch()) == (40, 4, 40, 4)
    log.append_as_leader([b"z"], 5, 1)
    assert log.end_offset_for_epoch(4) == (40, 4)
    assert log.end_offset_for_epoch(5) == (41, 5)
    log.close()


def test_file_log_writes_the_epoch_checkpoint_at_flush_and_reopening_repairs_a_stale_one(tmp_path):
    checkpoint = tmp_path / LEADER_EPOCH_CHECKPOINT
    log = FileLog.open(tmp_path, clock_ms=_clock)
    log.append_as_leader([b"a"], 1, 0)
    log.flush()
    assert read_epoch_entries(checkpoint) == [(1, 0)]
    log.append_as_leader([b"b"], 2, 0)  # a new epoch: not written on the appending (event loop) thread
    assert read_epoch_entries(checkpoint) == [(1, 0)]
    log.flush()
    assert read_epoch_entries(checkpoint) == [(1, 0), (2, 1)]
    log.append_as_leader([b"c"], 3, 0)
    log.close()
    write_epoch_entries(checkpoint, [(1, 0), (2, 1)])  # a crash after the data, before the checkpoint
    reopened = FileLog.open(tmp_path, clock_ms=_clock)
    assert reopened.epoch_entries() == [(0, 0), (1, 0), (2, 1), (3, 2)]
    assert reopened.end_offset_for_epoch(2).offset == 2
    reopened.close()
