"""A fault-free, synchronous driver for a few RaftNodes (unit tests only)."""

from __future__ import annotations

import random
from collections import deque

from tierlog.raft import (
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    Output,
    RaftConfig,
    RaftNode,
    RequestOutcome,
)
from tierlog.raft.committed import hand_to

FAST = RaftConfig(cluster_id="t", election_timeout_ms=100, election_backoff_max_ms=100, fetch_timeout_ms=200,
                  fetch_max_wait_ms=50, request_timeout_ms=150, retry_backoff_ms=10, append_linger_ms=0,
                  max_replication_lag_ms=1000, max_batch_records=10)


class Recorder:
    def __init__(self):
        self.commits = []
        self.loads = []
        self.leaders = []
        self.node = None

    def handle_commit(self, batch):
        self.commits.append(batch)

    def handle_load_snapshot(self, reader):
        self.loads.append((reader.snapshot_id, list(reader)))

    def handle_leader_change(self, leader):
        self.leaders.append(leader)

    def values(self):
        return [r for b in self.commits for r in b.records]


class Delivering:
    """A RaftNode whose calls hand every Output's committed items to ``listener`` before they
    return, as the listener push did: tests that call the node directly keep seeing commits."""

    def __init__(self, node: RaftNode, listener):
        self._node = node
        self._listener = listener

    def __getattr__(self, name):
        attr = getattr(self._node, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            result = attr(*args, **kwargs)
            out = result.output if isinstance(result, RequestOutcome) else result
            if isinstance(out, Output):
                for item in out.committed:
                    hand_to(self._listener, item)
            return result
        return call


def listened_node(node_id, voters, log, snapshots, store, config, rng, listener, now_ms):
    """A RaftNode wrapped in Delivering (the snapshot it loads at start comes with its first call)."""
    return Delivering(RaftNode(node_id, voters, log, snapshots, store, config, rng, now_ms), listener)


class Cluster:
    def __init__(self, voters=3, observers=0, config=FAST, seed=1):
        self.config = config
        self.now = 0
        self.rng = random.Random(seed)
        self.voters = frozenset(range(1, voters + 1))
        self.ids = list(range(1, voters + observers + 1))
        self.logs = {i: MemoryLog() for i in self.ids}
        self.snaps = {i: MemorySnapshotStore() for i in self.ids}
        self.stores = {i: MemoryQuorumStateStore() for i in self.ids}
        self.listeners = {}
        self.nodes = {}
        self.down: set[int] = set()
        self.isolated: set[int] = set()  # running, but the network drops its messages
        self.queue: deque = deque()
        self.tokens = {}
        for i in self.ids:
            self.start(i)

    def start(self, i):
        self.open_stores(i)
        self.listeners[i] = Recorder()
        self.nodes[i] = Delivering(self.make_node(i), self.listeners[i])
        self.listeners[i].node = self.nodes[i]
        self.down.discard(i)
        self.tokens[i] = {}
        self.apply(i, self.nodes[i].tick(self.now))

    def make_node(self, i) -> RaftNode:
        """Hook for other node set-ups (a dynamic quorum's voter set, directory, endpoints)."""
        return RaftNode(i, self.voters, self.logs[i], self.snaps[i], self.stores[i], self.config,
                        random.Random(self.rng.random()), self.now)

    def open_stores(self, i):
        """Hook for file-backed stores (re-opened on every start)."""

    def stop(self, i):
        self.down.add(i)

    def apply(self, i, out):
        """Persist what the Output asks for (at once: no crash can fall in between here), then send."""
        if out.quorum_state is not None:
            self.stores[i].write(out.quorum_state)
        if out.flush_log_to is not None:
            self.logs[i].flush()
            self.apply(i, self.nodes[i].handle_log_flushed(self.now))
        for dst, req in out.sends:
            self.queue.append(("req", i, dst, req, None))
        for token, resp in out.responses:
            src, req = self.tokens[i].pop(token)
            self.queue.append(("resp", i, src, req, resp))

    def deliver(self):
        while self.queue:
            kind, src, dst, req, resp = self.queue.popleft()
            if {src, dst} & (self.down | self.isolated):
                continue
            node = self.nodes[dst]
            if kind == "req":
                outcome = node.handle_request(src, req, self.now)
                if outcome.response is None:
                    self.tokens[dst][outcome.token] = (src, req)
                self.apply(dst, outcome.output)  # persists before the answer leaves
                if outcome.response is not None:
                    self.queue.append(("resp", dst, src, req, outcome.response))
            else:
                self.apply(dst, node.handle_response(src, req, resp, self.now))

    def step(self, ms=1):
        self.deliver()
        self.now += ms
        for i in self.ids:
            if i not in self.down:
                self.apply(i, self.nodes[i].tick(self.now))
        self.deliver()

    def run_until(self, pred, max_ms=5000):
        for _ in range(max_ms):
            if pred():
                return
            self.step()
        raise AssertionError("condition not reached")

    def leader(self):
        leaders = [n for i, n in self.nodes.items() if i not in self.down | self.isolated and n.is_leader]
        return leaders[0] if len(leaders) == 1 else None

    def elect(self):
        self.run_until(lambda: self.leader() is not None and all(
            self.nodes[i].leader_and_epoch == self.leader().leader_and_epoch
            for i in self.ids if i not in self.down | self.isolated))
        return self.leader()

    def commit(self, values):
        leader = self.leader()
        last = leader.propose(values, self.now)
        self.apply(leader.node_id, leader.tick(self.now))
        self.run_until(lambda: all(self.nodes[i].high_watermark > last
                                   for i in self.ids if i not in self.down | self.isolated))
        return last
