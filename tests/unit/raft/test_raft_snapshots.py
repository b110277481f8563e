"""KIP-630 in the core: snapshot creation, LBO advance and deletion, Fetch below the LBO,
FetchSnapshot, start-up validation, DivergingEpoch truncation."""

import dataclasses
import random

from raft_harness import FAST, Cluster, Recorder, listened_node

from tierlog.raft import (
    Err,
    FetchRequest,
    FetchSnapshotRequest,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    OffsetAndEpoch,
)
from tierlog.raft.fetch import (
    DIVERGING,
    SNAPSHOT,
    VALID,
    truncation_offset,
    validate_fetch,
)
from tierlog.raft.leader import LeaderProgress
from tierlog.raft.snapshots import SnapshotWriter


def _snapshot(node, values=(b"s",)):
    """Snapshot the node at its high watermark (a batch end)."""
    end = node.high_watermark
    w = node.create_snapshot(end, node.log.epoch_of(end - 1), 0)
    assert w is not None
    w.append(list(values))
    w.freeze()
    return OffsetAndEpoch(end, node.log.epoch_of(end - 1))


# ---------------------------------------------------------------- fetch validation and truncation

def _log(*batches):
    log = MemoryLog()
    for epoch, n in batches:
        log.append_as_leader([b"x"] * n, epoch, 0)
    return log


def test_validate_fetch_and_diverging_truncation():
    leader = _log((1, 5), (3, 5))          # offsets 0-4 epoch 1, 5-9 epoch 3
    follower = _log((1, 5), (2, 3))        # offsets 0-4 epoch 1, 5-7 epoch 2
    assert validate_fetch(leader, 5, 1) == (VALID, None)
    assert validate_fetch(leader, 10, 3) == (VALID, None)
    kind, div = validate_fetch(leader, 8, 2)
    assert kind == DIVERGING and div == OffsetAndEpoch(5, 1)
    assert truncation_offset(follower, div) == 5
    kind, div = validate_fetch(leader, 12, 3)   # beyond the leader's end in the same epoch
    assert kind == DIVERGING and div == OffsetAndEpoch(10, 3)
    longer = _log((1, 7))                  # epoch 1 runs further on the follower
    assert truncation_offset(longer, OffsetAndEpoch(5, 1)) == 5


def test_validate_fetch_below_the_log_start_asks_for_the_snapshot():
    leader = _log((1, 5), (3, 5))
    leader.delete_before(5, 1)
    assert validate_fetch(leader, 4, 1)[0] == SNAPSHOT
    assert validate_fetch(leader, 0, 0)[0] == SNAPSHOT
    assert validate_fetch(leader, 5, 1) == (VALID, None)     # exactly at the snapshot
    assert validate_fetch(leader, 5, 0)[0] == SNAPSHOT       # at it with another epoch
    assert validate_fetch(leader, 7, 0)[0] == SNAPSHOT       # an epoch older than the snapshot


def test_follower_truncates_on_diverging_epoch_through_the_node():
    c = Cluster()
    old = c.elect()
    c.commit([b"1"])
    c.isolated.add(old.node_id)            # the old leader appends alone: never committed
    old.propose([b"lost-1", b"lost-2"], c.now)
    old.tick(c.now)
    tail = old.log.end_offset
    new = c.elect()
    assert new is not old
    c.commit([b"2"])
    c.isolated.clear()
    c.commit([b"3"])
    assert old.metrics["diverging-truncations"] >= 1 and old.log.end_offset == new.log.end_offset
    assert tail > old.high_watermark - 3
    assert c.listeners[old.node_id].values() == [b"1", b"2", b"3"]


# ---------------------------------------------------------------- snapshots and LBO

def test_create_snapshot_rules():
    c = Cluster(voters=1)
    leader = c.elect()
    c.commit([b"1", b"2"])
    hw = leader.high_watermark
    assert leader.create_snapshot(hw + 1, leader.epoch, 0) is None          # above the high watermark
    sid = _snapshot(leader)
    assert sid.offset == hw
    assert leader.create_snapshot(sid.offset, sid.epoch, 0) is None         # exists already
    assert leader.metrics["snapshots-generated"] == 1 and leader.metrics["SnapshotSizeBytes"] > 0


def test_lbo_target_rules():
    p = LeaderProgress(1, frozenset({1, 2, 3}), 0, 0, dataclasses.replace(FAST, max_replication_lag_ms=1000), 0)
    p.high_watermark = 50
    snaps = [OffsetAndEpoch(10, 1), OffsetAndEpoch(30, 1), OffsetAndEpoch(60, 2)]
    p.update_replica(2, 40, 50, 100)
    p.update_replica(3, 20, 50, 100)
    p.update_replica(7, 35, 50, 100)   # an observer counts as a live replica too
    # every live replica has 10, not 30; 60 is above the high watermark
    assert p.lbo_target(snaps, 0, 0, 100) == OffsetAndEpoch(10, 1)
    p.update_replica(3, 45, 50, 200)
    assert p.lbo_target(snaps, 10, 100, 200) == OffsetAndEpoch(30, 1)
    # a replica silent for max.replication.lag.ms is not live any more ...
    p.update_replica(2, 50, 50, 1500)
    p.update_replica(3, 50, 50, 1500)
    p.observers[7].last_fetch_ms = 100
    assert p.lbo_target(snaps, 10, 1400, 1500) == OffsetAndEpoch(30, 1)
    # ... and once the LBO is max.replication.lag.ms old it moves regardless of laggards
    p.observers[7].last_fetch_ms = 1500
    p.observers[7].end_offset = 0
    assert p.lbo_target(snaps, 10, 1400, 1500) is None
    assert p.lbo_target(snaps, 10, 400, 1500) == OffsetAndEpoch(30, 1)


def test_leader_advances_lbo_to_a_snapshot_and_deletes_older_snapshots():
    c = Cluster()
    leader = c.elect()
    c.commit([b"1"])
    s1 = _snapshot(leader)
    c.commit([b"2"])
    c.run_until(lambda: leader.log_start_offset == s1.offset, max_ms=200)
    c.commit([b"3"])
    s2 = _snapshot(leader)
    c.commit([b"4"])
    c.run_until(lambda: leader.log_start_offset == s2.offset, max_ms=200)
    assert leader.snapshots.list() == [s2]     # When to Delete Snapshots: below LBO goes
    assert leader.metrics["log-start-advances"] >= 2


def test_lagging_follower_bootstraps_from_the_snapshot_in_chunks():
    config = dataclasses.replace(FAST, snapshot_chunk_bytes=16, max_replication_lag_ms=100)
    c = Cluster(config=config)
    leader = c.elect()
    lag = next(i for i in c.ids if i != leader.node_id)
    c.stop(lag)
    c.commit([b"1", b"2"])
    sid = _snapshot(leader, [b"state-1", b"state-2"])
    c.commit([b"3"])
    c.run_until(lambda: leader.log_start_offset == sid.offset, max_ms=500)  # after max.replication.lag.ms
    c.down.discard(lag)
    c.run_until(lambda: c.nodes[lag].high_watermark >= leader.high_watermark, max_ms=2000)
    f = c.nodes[lag]
    assert f.metrics["snapshots-fetched"] == 1
    assert c.listeners[lag].loads == [(sid, [b"state-1", b"state-2"])]
    assert f.log_start_offset == sid.offset and f.snapshots.list() == [sid]
    assert c.listeners[lag].values()[-1] == b"3"


def test_fetch_below_lbo_answers_snapshot_id_and_fetch_snapshot_errors():
    c = Cluster(voters=1)
    leader = c.elect()
    c.commit([b"1", b"2"])
    sid = _snapshot(leader)
    c.commit([b"3"])
    c.run_until(lambda: leader.log_start_offset == sid.offset, max_ms=2000)
    r = leader.handle_request(9, FetchRequest("t", 9, leader.epoch, 0, 0, 0, 0, 1000), c.now).response
    assert r.error == Err.NONE and r.snapshot_id == sid and r.batches == ()
    size = leader.snapshots.size(sid)
    ok = leader.handle_request(9, FetchSnapshotRequest("t", 9, leader.epoch, sid, 0, 10), c.now).response
    assert ok.error == Err.NONE and ok.size == size and len(ok.data) == 10
    missing = leader.handle_request(9, FetchSnapshotRequest("t", 9, leader.epoch, OffsetAndEpoch(1, 1), 0, 10),
                                    c.now).response
    assert missing.error == Err.SNAPSHOT_NOT_FOUND
    past = leader.handle_request(9, FetchSnapshotRequest("t", 9, leader.epoch, sid, size + 1, 10), c.now).response
    assert past.error == Err.POSITION_OUT_OF_RANGE
    fenced = leader.handle_request(9, FetchSnapshotRequest("t", 9, leader.epoch - 1, sid, 0, 10), c.now).response
    assert fenced.error == Err.FENCED_LEADER_EPOCH


def test_restart_loads_latest_snapshot_then_the_log_suffix():
    c = Cluster(voters=1)
    leader = c.elect()
    c.commit([b"1", b"2"])
    sid = _snapshot(leader, [b"snap"])
    c.commit([b"3"])
    c.stop(1)
    c.start(1)
    rec = c.listeners[1]
    assert rec.loads == [(sid, [b"snap"])]
    c.elect()
    c.commit([b"4"])
    assert rec.values() == [b"3", b"4"]


# ---------------------------------------------------------------- Validation of Snapshot and Log

def _node(log, snaps):
    rec = Recorder()
    node = listened_node(1, frozenset({1, 2, 3}), log, snaps, MemoryQuorumStateStore(), FAST, random.Random(1), rec, 0)
    node.tick(0)        # the first Output carries the snapshot loaded at start
    return node, rec


def _write(snaps, sid, values=(b"v",)):
    w = SnapshotWriter(snaps.create(sid), 0, lambda *a: None)
    w.append(list(values))
    w.freeze()


def test_startup_log_without_covering_snapshot_is_treated_as_empty():
    log = _log((1, 4), (1, 6))
    log.delete_before(4, 1)                 # the log starts at 4 but no snapshot covers 3
    node, rec = _node(log, MemorySnapshotStore())
    assert (log.start_offset, log.end_offset) == (0, 0)
    assert node.metrics["invalid-log-resets"] == 1 and rec.loads == []


def test_startup_snapshot_newer_than_the_log_restarts_the_log_there():
    log = _log((1, 3))
    snaps = MemorySnapshotStore()
    _write(snaps, OffsetAndEpoch(8, 2))
    node, rec = _node(log, snaps)
    assert (log.start_offset, log.start_epoch, log.end_offset) == (8, 2, 8)
    assert rec.loads[0][0] == OffsetAndEpoch(8, 2) and node.high_watermark == 8


def test_startup_moves_the_log_start_to_a_snapshot_and_drops_older_ones():
    log = _log((1, 2), (1, 2), (2, 6))
    log.delete_before(2, 1)
    snaps = MemorySnapshotStore()
    _write(snaps, OffsetAndEpoch(1, 1))     # below the log start: deleted
    _write(snaps, OffsetAndEpoch(4, 1))     # the first one inside the log: the new start
    _, rec = _node(log, snaps)
    assert log.start_offset == 4 and snaps.list() == [OffsetAndEpoch(4, 1)]
    assert rec.loads[0][0] == OffsetAndEpoch(4, 1)


def test_startup_snapshot_disagreeing_with_the_log_epoch_wins():
    log = _log((1, 4), (2, 6))              # offset 5 has epoch 2 locally
    snaps = MemorySnapshotStore()
    _write(snaps, OffsetAndEpoch(6, 3))     # but the committed snapshot says epoch 3
    _node(log, snaps)
    assert (log.start_offset, log.end_offset, log.start_epoch) == (6, 6, 3)
