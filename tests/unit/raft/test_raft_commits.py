"""CommitDelivery: in-order delivery up to the high watermark, snapshots, leader-change notices,
handed out by take() (the core calls nothing above it)."""

import pytest

from tierlog.raft.commits import CommitDelivery
from tierlog.raft.committed import CommittedBatch
from tierlog.raft.log import MemoryLog
from tierlog.raft.snapshots import MemorySnapshotStore, SnapshotReader, SnapshotWriter
from tierlog.raft.types import LeaderAndEpoch, OffsetAndEpoch


class _Taken:
    """What take() handed out so far, by kind."""

    def __init__(self, delivery):
        self.delivery = delivery
        self.items = []

    def take(self):
        ready, _ = self.delivery.take()
        self.items += ready

    @property
    def commits(self):
        self.take()
        return [i for i in self.items if isinstance(i, CommittedBatch)]

    @property
    def loads(self):
        self.take()
        return [i.snapshot_id for i in self.items if isinstance(i, SnapshotReader)]

    @property
    def leaders(self):
        self.take()
        return [i for i in self.items if isinstance(i, LeaderAndEpoch)]


def _setup(leader=False, max_bytes=8 << 20, max_unapplied=32 << 20):
    log, snaps = MemoryLog(), MemorySnapshotStore()
    metrics = {"snapshots-loaded": 0, "SnapshotSizeBytes": 0, "LoadSnapshotLatencyMs": 0.0}
    c = CommitDelivery(log, snaps, metrics, lambda: leader, max_bytes_per_output=max_bytes,
                       max_unapplied_bytes=max_unapplied)
    return log, snaps, _Taken(c), c


def _snapshot(snaps, sid):
    w = SnapshotWriter(snaps.create(sid), 0, lambda *a: None)
    w.append([b"state"])
    w.freeze()


def test_delivers_each_batch_once_in_order_up_to_the_high_watermark():
    log, _, lis, c = _setup()
    for v in (b"a", b"b", b"c"):
        log.append_as_leader([v], 1, 0)
    assert c.raise_to(2)
    assert [b.records for b in lis.commits] == [[b"a"], [b"b"]] and c.applied_offset == 2
    assert not c.raise_to(1) and c.high_watermark == 2  # never down
    c.raise_to(3)
    assert [b.base_offset for b in lis.commits] == [0, 1, 2]


def test_loads_the_snapshot_when_the_log_no_longer_holds_what_is_needed():
    log, snaps, lis, c = _setup()
    _snapshot(snaps, OffsetAndEpoch(4, 1))
    log.truncate_fully_and_start_at(4, 1)
    log.append_as_leader([b"e"], 1, 0)
    c.raise_to(5)
    assert lis.loads == [OffsetAndEpoch(4, 1)] and [b.base_offset for b in lis.commits] == [4]


def test_an_installed_snapshot_moves_the_high_watermark():
    _, snaps, lis, c = _setup()
    _snapshot(snaps, OffsetAndEpoch(7, 2))
    c.snapshot_installed(OffsetAndEpoch(7, 2))
    assert (c.applied_offset, c.high_watermark, lis.loads) == (7, 7, [OffsetAndEpoch(7, 2)])


def test_a_leader_never_loads_a_snapshot():
    _, snaps, _, c = _setup(leader=True)
    _snapshot(snaps, OffsetAndEpoch(7, 2))
    with pytest.raises(AssertionError):
        c.load_snapshot(OffsetAndEpoch(7, 2))


def test_a_leader_is_announced_once_caught_up_past_its_epoch_start():
    log, _, lis, c = _setup()
    log.append_as_leader([b"a"], 1, 0)
    me = LeaderAndEpoch(1, 1)
    c.notify_leader_change(me, epoch_start_offset=0)
    assert lis.leaders == []
    c.raise_to(1)
    c.notify_leader_change(me, epoch_start_offset=0)
    c.notify_leader_change(me, epoch_start_offset=0)
    assert lis.leaders == [me]


def test_one_output_carries_about_its_byte_budget_and_says_more_is_due():
    log, _, _, c = _setup(max_bytes=10)
    for v in (b"a" * 6, b"b" * 6, b"c" * 6):
        log.append_as_leader([v], 1, 0)
    c.raise_to(3)
    first, behind = c.take()
    assert [b.base_offset for b in first] == [0, 1] and behind
    second, behind = c.take()
    assert [b.base_offset for b in second] == [2] and not behind
    assert c.take() == ([], False)


def test_nothing_more_is_handed_out_until_the_shell_applied_enough():
    log, _, _, c = _setup(max_bytes=100, max_unapplied=12)
    for v in (b"a" * 6, b"b" * 6, b"c" * 6, b"d" * 6):
        log.append_as_leader([v], 1, 0)
    c.raise_to(4)
    first, behind = c.take()
    assert [b.base_offset for b in first] == [0, 1] and not behind      # 12 bytes unapplied: wait
    assert c.take() == ([], False)
    c.acknowledge(1)                                                     # the shell applied offset 0
    assert [b.base_offset for b in c.take()[0]] == [2]
    c.acknowledge(4)
    assert [b.base_offset for b in c.take()[0]] == [3]
