"""RaftDriver's persistence: writes run on the writer thread, and nothing they cover is
sent, answered or counted before they are done."""

import asyncio
import random
import threading
import time

from tierlog.net.client import PeerUnavailable
from tierlog.raft import (
    CommittedBatch,
    LeaderAndEpoch,
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


def _node(voters, store, log):
    return RaftNode(1, frozenset(voters), log, MemorySnapshotStore(), store, CONFIG, random.Random(1), wall_clock_ms())


async def _committed_until(queue, offset):
    """What the driver handed over (in order) until a batch containing ``offset``."""
    items = []
    while not (items and isinstance(items[-1], CommittedBatch) and items[-1].last_offset >= offset):
        items.append(await asyncio.wait_for(queue.get(), 5))
    return items


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
        driver = RaftDriver(_NoPeers(), 1.0, node, asyncio.Queue())
        driver.start()
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
        queue = asyncio.Queue()
        driver = RaftDriver(_NoPeers(), 1.0, node, queue)
        driver.start()
        await _until(lambda: node.is_leader)
        last = driver.propose([b"x"])
        await _yield_loop()
        before = [queue.get_nowait() for _ in range(queue.qsize())]
        assert before == [LeaderAndEpoch(None, 0)]          # nothing committed yet: the unflushed log
        assert node.high_watermark == 0 and log.flushed_end_offset == 0
        gated.gate.set()
        committed = await _committed_until(queue, last)
        assert log.flushed_end_offset > last and node.high_watermark > last
        assert committed[0].control and committed[-1].records == [b"x"]     # the LeaderChange record first
        assert all(t.startswith("raft-writer") for t in gated.threads)
        await driver.stop()

    asyncio.run(scenario())
