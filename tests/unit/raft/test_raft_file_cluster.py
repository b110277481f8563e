"""Three RaftNodes on file-backed stores in a tmp dir: replicate, snapshot, restart from disk."""

import dataclasses

from raft_harness import FAST, Cluster

from tierlog.raft import FileQuorumStateStore
from tierlog.raft.file_log import METADATA_PARTITION_DIR, FileLog
from tierlog.raft.file_snapshots import FileSnapshotStore


class FileCluster(Cluster):
    def __init__(self, root, **kw):
        self.root = root
        super().__init__(**kw)

    def open_stores(self, i):
        d = self.root / f"node{i}"
        part = d / METADATA_PARTITION_DIR
        old = self.logs.get(i)
        if isinstance(old, FileLog):
            old.close()
        self.logs[i] = FileLog.open(part, clock_ms=lambda: self.now)
        self.snaps[i] = FileSnapshotStore(part)
        self.stores[i] = FileQuorumStateStore(d, self.voters)


def test_file_backed_quorum_survives_restart_and_bootstraps_a_wiped_node(tmp_path):
    c = FileCluster(tmp_path, config=dataclasses.replace(FAST, max_replication_lag_ms=50))
    leader = c.elect()
    c.commit([b"1", b"2"])
    end = leader.high_watermark
    for node in c.nodes.values():  # every replica snapshots its own state machine
        w = node.create_snapshot(end, node.log.epoch_of(end - 1), 0)
        w.append([b"state"])
        w.freeze()
    c.commit([b"3"])
    c.run_until(lambda: all(n.log_start_offset == end for n in c.nodes.values()), max_ms=500)
    files = sorted(p.name for p in (tmp_path / f"node{leader.node_id}" / METADATA_PARTITION_DIR).iterdir())
    assert f"{end:020d}-{leader.log.epoch_of(end - 1):010d}.checkpoint" in files
    assert (tmp_path / f"node{leader.node_id}" / "quorum-state").exists()
    # restart every node from its files
    for i in c.ids:
        c.stop(i)
    for i in c.ids:
        c.start(i)
    c.elect()
    c.commit([b"4"])
    for i in c.ids:
        rec = c.listeners[i]
        state = [v for _, vs in rec.loads for v in vs] + rec.values()
        assert state[-1] == b"4" and (b"state" in state or state[:3] == [b"1", b"2", b"3"])
    # wipe one follower completely: it bootstraps through FetchSnapshot
    victim = next(i for i in c.ids if not c.nodes[i].is_leader)
    c.stop(victim)
    c.logs[victim].close()
    import shutil
    shutil.rmtree(tmp_path / f"node{victim}")
    c.start(victim)
    c.commit([b"5"])
    rec = c.listeners[victim]
    assert rec.loads and rec.loads[0][1] == [b"state"]
    assert rec.values()[-1] == b"5"
