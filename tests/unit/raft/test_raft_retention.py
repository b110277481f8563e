"""LogStartRetention: start-up validation, the leader's and follower's LBO advance, snapshot deletion."""

from tierlog.raft.leader import LeaderProgress
from tierlog.raft.log import MemoryLog
from tierlog.raft.retention import LogStartRetention
from tierlog.raft.snapshots import MemorySnapshotStore
from tierlog.raft.types import OffsetAndEpoch, RaftConfig

CONFIG = RaftConfig(max_replication_lag_ms=1000)


def _setup(batches=6, snapshot_ends=()):
    log, snaps = MemoryLog(), MemorySnapshotStore()
    for _ in range(batches):
        log.append_as_leader([b"x"], 1, 0)
    for end in snapshot_ends:
        w = snaps.create(OffsetAndEpoch(end, 1))
        w.append(b"s")
        w.freeze()
    metrics = {"log-start-advances": 0, "invalid-log-resets": 0}
    return log, snaps, metrics, LogStartRetention(log, snaps, metrics, 0)


def test_startup_restarts_the_log_at_a_snapshot_newer_than_it():
    log, snaps, _, r = _setup(batches=3, snapshot_ends=[8])
    r.validate_at_startup()
    assert (log.start_offset, log.end_offset) == (8, 8) and snaps.list() == [OffsetAndEpoch(8, 1)]


def test_startup_resets_a_log_whose_start_no_snapshot_covers():
    log, snaps, metrics, r = _setup(batches=6, snapshot_ends=[2])
    log.delete_before(4, 1)
    r.validate_at_startup()
    assert (log.start_offset, log.end_offset) == (0, 0) and snaps.list() == []
    assert metrics["invalid-log-resets"] == 1


def test_leader_advances_to_a_snapshot_every_live_replica_holds_and_deletes_older_ones():
    log, snaps, metrics, r = _setup(batches=6, snapshot_ends=[2, 4])
    progress = LeaderProgress(1, frozenset({1, 2}), 0, 6, CONFIG, 0)
    progress.update_replica(2, 1, 6, 0)  # the follower holds offset 0 only
    assert r.advance_as_leader(progress, 6, 6, 10) == 1000  # check again when the LBO is old
    assert log.start_offset == 0
    progress.update_replica(2, 6, 6, 20)
    assert r.advance_as_leader(progress, 6, 6, 20) is None
    assert log.start_offset == 4 and snaps.list() == [OffsetAndEpoch(4, 1)]
    assert metrics["log-start-advances"] == 1


def test_follower_follows_the_leaders_lbo_up_to_its_own_snapshot():
    log, snaps, _, r = _setup(batches=6, snapshot_ends=[2, 5])
    r.advance_as_follower(high_watermark=6, applied=6)
    assert log.start_offset == 0  # the leader's LBO is still 0
    r.leader_lbo_seen(4)
    r.advance_as_follower(high_watermark=6, applied=6)
    assert log.start_offset == 2 and snaps.list() == [OffsetAndEpoch(2, 1), OffsetAndEpoch(5, 1)]


def test_restart_at_an_installed_snapshot():
    log, snaps, _, r = _setup(batches=3, snapshot_ends=[1, 9])
    r.restart_at(OffsetAndEpoch(9, 1))
    assert (log.start_offset, log.end_offset) == (9, 9) and snaps.list() == [OffsetAndEpoch(9, 1)]
