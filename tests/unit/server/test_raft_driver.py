"""RaftDriver's persistence: writes run on the writer thread, and nothing they cover is
sent, answered or counted before they are done."""

import asyncio
import random
import threading
import time

from tierlog.net.client import PeerUnavailable
from tierlog.raft import (
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    RaftConfig,
    RaftNode,
    VoteRequest,
    VoteResponse,
    wire,
)
from tierlog.server.raft_driver import RaftDriver, wall_clock_ms

CONFIG = RaftConfig(cluster_id="t", election_timeout_ms=100, append_linger_ms=0)


class _Gated:
    """Blocks the writer thread until ``gate`` opens; remembers which thread wrote."""

    def __init__(self):
        self.gate = threading.Event()
        self.threads: set[str] = set()

    def wait(self):
        self.threads.add(threading.current_thread().name)
        assert self.gate.wait(10)


class _GatedStore(MemoryQuorumStateStore):
    def __init__(self, gated):
        super().__init__()
        self.gated = gated

    def write(self, state):
        self.gated.wait()
        super().write(state)


class _GatedLog(MemoryLog):
    def __init__(self, gated):
        super().__init__()
        self.gated = gated

    def flush(self):
        self.gated.wait()
        super().flush()


class _NoPeers:
    async def request(self, *a, **kw):
        raise PeerUnavailable("no peers in this test")


class _Listener:
    def handle_commit(self, batch):
        pass

    def handle_load_snapshot(self, reader):
        pass

    def handle_leader_change(self, leader):
        pass


def _node(voters, store, log):
    return RaftNode(1, frozenset(voters), log, MemorySnapshotStore(), store, CONFIG, random.Random(1),
                    _Listener(), wall_clock_ms())


async def _yield_loop(times=20):
    for _ in range(times):
        await asyncio.sleep(0)


async def _until(pred, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.005)


def test_a_granted_vote_is_answered_only_once_it_is_on_disk():
    async def scenario():
        gated = _Gated()
        store = _GatedStore(gated)
        node = _node({1, 2, 3}, store, MemoryLog())
        driver = RaftDriver(_NoPeers(), 1.0)
        driver.start(node)
        api_key, body = wire.request_to_dict(VoteRequest("t", 5, 2, 0, 0))
        answer = asyncio.create_task(driver.handle(api_key, body))
        await _yield_loop()
        assert not answer.done() and store.state is None
        gated.gate.set()
        response = wire.response_from_dict(api_key, await asyncio.wait_for(answer, 5))
        assert isinstance(response, VoteResponse) and response.vote_granted
        assert store.state.voted_id == 2 and store.state.epoch >= 5
        assert gated.threads and all(t.startswith("raft-writer") for t in gated.threads)
        await driver.stop()

    asyncio.run(scenario())


def test_the_leader_counts_its_own_log_only_once_flushed():
    async def scenario():
        gated = _Gated()
        log = _GatedLog(gated)
        node = _node({1}, MemoryQuorumStateStore(), log)
        driver = RaftDriver(_NoPeers(), 1.0)
        driver.start(node)
        await _until(lambda: node.is_leader)
        last = driver.propose([b"x"])
        committed = asyncio.create_task(driver.wait_committed(last, 5))
        await _yield_loop()
        assert not committed.done() and node.high_watermark == 0 and log.flushed_end_offset == 0
        gated.gate.set()
        await committed
        assert log.flushed_end_offset > last and node.high_watermark > last
        assert all(t.startswith("raft-writer") for t in gated.threads)
        await driver.stop()

    asyncio.run(scenario())
