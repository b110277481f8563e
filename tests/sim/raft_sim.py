"""Deterministic simulation of the Raft quorum (tierlog.raft) with snapshots.

One seed drives everything: the network (drop, delay, duplicate, reorder through
random delays, partitions), crashes that lose unflushed log writes, restarts,
graceful resignations, client proposals and every node's RNG. Invariants are
checked after every event; then the faults heal and a leader must be elected and a
new write must commit on every node within a bounded virtual time.

Persistence is modelled as the asyncio shell does it (RaftNode's Ready contract):
an Output's quorum-state write and log flush take a random 0-3 ms on the node's
one ordered writer, and the Output's messages (and those of every later Output)
leave only after that. A crash in between loses the write and the messages.
Checked at the moment a message leaves: the sender's persisted epoch is at least
the message's, and a granted vote is on disk.

With ``SimParams.dynamic`` the quorum runs kraft.version 1 (KIP-853): voters start
as the bootstrap set, observers join with an empty one and find the leader through
their bootstrap ids, and the leader is asked to add caught-up observers, remove
voters (itself included) and remove voters whose disk was wiped (a wiped node comes
back with a new directory id, as an observer, and may be added again). Checked
besides: the leader never has two voter changes uncommitted, and the voter sets in
effect at the nodes that hold the latest committed set never allow two disjoint
majorities.

Replay a failure: ``TIERLOG_SIM_SEED=<n> pytest tests/sim -k raft``.
"""

from __future__ import annotations

import heapq
import random
import struct
from dataclasses import dataclass, field

from tierlog.raft import (
    CommittedBatch,
    LeaderAndEpoch,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    NotLeaderError,
    RaftConfig,
    RaftNode,
    SnapshotReader,
)
from tierlog.raft.committed import hand_to
from tierlog.raft.voters import Voter, VoterSet

MOD = (1 << 61) - 1


class SimFailure(AssertionError):
    pass


@dataclass(frozen=True)
class SimParams:
    voters: int = 3
    observers: int = 1
    chaos_ms: int = 2500
    liveness_ms: int = 20_000
    snapshot_every: int = 6  # records between the state machine's snapshots
    max_delay_ms: int = 15
    fault_every_ms: int = 120
    propose_every_ms: int = 25
    dynamic: bool = False           # kraft.version 1: voter changes and disk wipes
    reconfig_every_ms: int = 150


def sim_config(rng: random.Random) -> RaftConfig:
    return RaftConfig(
        cluster_id="sim", election_timeout_ms=100, election_backoff_max_ms=100, fetch_timeout_ms=200,
        fetch_max_wait_ms=40, request_timeout_ms=120, retry_backoff_ms=10,
        append_linger_ms=rng.choice([0, 0, 5]), max_replication_lag_ms=300,
        fetch_max_bytes=rng.choice([300, 4096]), snapshot_chunk_bytes=rng.choice([64, 100_000]),
        max_batch_records=4,
    )


class Truth:
    """What has been committed anywhere: batches by base offset, state digest by end offset."""

    def __init__(self) -> None:
        self.batches: dict[int, tuple[int, int, tuple[bytes, ...], bool]] = {}
        self.states: dict[int, tuple[int, int, int]] = {}
        self.max_committed = 0

    def batch(self, node_id: int, b: CommittedBatch) -> None:
        key = (b.last_offset, b.epoch, tuple(b.records) if not b.control else tuple(b.control_records), b.control)
        seen = self.batches.setdefault(b.base_offset, key)
        if seen != key:
            raise SimFailure(f"node {node_id} committed {key} at {b.base_offset}, another node {seen}")
        self.max_committed = max(self.max_committed, b.last_offset + 1)

    def state(self, node_id: int, end_offset: int, digest: tuple[int, int, int]) -> None:
        seen = self.states.setdefault(end_offset, digest)
        if seen != digest:
            raise SimFailure(f"node {node_id} state at {end_offset} is {digest}, another node had {seen}")


class SumMachine:
    """The state machine: sum, count and a hash chain of committed integers.

    Snapshots itself every ``every`` records through create_snapshot, so loading a
    snapshot must reproduce exactly what replaying produced.
    """

    def __init__(self, node_id: int, sim: Simulation):
        self.node_id = node_id
        self.sim = sim
        self.node: RaftNode | None = None
        self.total = self.count = self.chain = 0
        self.applied = 0
        self.since_snapshot = 0
        self.loads = 0

    def digest(self) -> tuple[int, int, int]:
        return (self.total, self.count, self.chain)

    def handle_commit(self, batch: CommittedBatch) -> None:
        if batch.base_offset != self.applied:
            raise SimFailure(f"node {self.node_id}: commit at {batch.base_offset}, expected {self.applied}")
        self.sim.truth.batch(self.node_id, batch)
        for r in batch.records:
            v = int(r)
            self.total += v
            self.count += 1
            self.chain = (self.chain * 1_000_003 + v) % MOD
        self.applied = batch.last_offset + 1
        self.sim.truth.state(self.node_id, self.applied, self.digest())
        self.since_snapshot += len(batch.records)
        if self.since_snapshot >= self.sim.params.snapshot_every and self.node is not None:
            w = self.node.create_snapshot(self.applied, batch.epoch, batch.append_timestamp)
            if w is not None:
                self.since_snapshot = 0
                w.append([struct.pack(">qqq", *self.digest())])
                if self.sim.rng.random() < 0.05:
                    w.close()  # an abandoned snapshot
                else:
                    w.freeze()

    def handle_load_snapshot(self, reader: SnapshotReader) -> None:
        if self.node is not None and self.node.is_leader:
            raise SimFailure(f"node {self.node_id} loaded a snapshot as leader")
        values = list(reader)
        if len(values) != 1:
            raise SimFailure(f"snapshot {reader.snapshot_id} holds {len(values)} records")
        self.total, self.count, self.chain = struct.unpack(">qqq", values[0])
        self.applied = reader.snapshot_id.offset
        self.loads += 1
        self.sim.truth.state(self.node_id, self.applied, self.digest())

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        pass


@dataclass
class Disk:
    log: MemoryLog = field(default_factory=MemoryLog)
    snapshots: MemorySnapshotStore = field(default_factory=MemorySnapshotStore)
    quorum: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    directory_id: bytes = bytes(16)
    joined: bool = False            # formatted to join a running quorum (empty bootstrap set)


class Simulation:
    def __init__(self, seed: int, params: SimParams):
        self.seed = seed
        self.params = params
        self.rng = random.Random(seed)
        self.config = sim_config(self.rng)
        self.now = 0
        self.voter_ids = frozenset(range(1, params.voters + 1))
        self.all_ids = list(range(1, params.voters + params.observers + 1))
        self.disks = {i: Disk(directory_id=_dir(i, 0), joined=i not in self.voter_ids) for i in self.all_ids}
        self.wipes = dict.fromkeys(self.all_ids, 0)
        self.nodes: dict[int, RaftNode | None] = {}
        self.machines: dict[int, SumMachine] = {}
        self.incarnation = dict.fromkeys(self.all_ids, 0)
        self.tokens: dict[int, dict[int, tuple[int, object]]] = {}
        self.tick_at: dict[int, int] = {}
        self.persist_at: dict[int, int] = {}   # when the node's writer is done with what it was given
        self.persisting: dict[int, int] = dict.fromkeys(self.all_ids, 0)  # Outputs not yet released
        self.queue: list = []
        self.seq = 0
        self.truth = Truth()
        self.drop = 0.0
        self.dup = 0.0
        self.blocked: set[tuple[int, int]] = set()
        self.leaders: dict[int, int] = {}
        self.max_epoch = dict.fromkeys(self.all_ids, 0)
        self.last_hw: dict[int, int] = {}
        self.events = 0
        self.healed = False
        self.proposed = 0
        self.stats = {"crashes": 0, "partitions": 0, "resigns": 0, "drops": 0, "dups": 0,
                      "snapshot_loads": 0, "elections": 0, "voter-adds": 0, "voter-removes": 0,
                      "self-removals": 0, "wipes": 0}
        for i in self.all_ids:
            self.start(i)

    # ---------------------------------------------------------------- plumbing

    def push(self, at: int, kind: str, *payload) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (at, self.seq, kind, payload))

    def start(self, i: int) -> None:
        d = self.disks[i]
        m = SumMachine(i, self)
        self.machines[i] = m
        self.incarnation[i] += 1
        self.tokens[i] = {}
        self.persisting[i] = 0
        self.persist_at.pop(i, None)
        voters: frozenset[int] | VoterSet = self.voter_ids
        if self.params.dynamic:
            voters = VoterSet([] if d.joined else [Voter(v, _dir(v, 0)) for v in sorted(self.voter_ids)])
        node = RaftNode(i, voters, d.log, d.snapshots, d.quorum, self.config,
                        random.Random(self.rng.getrandbits(64)), self.now,
                        directory_id=d.directory_id if self.params.dynamic else None,
                        bootstrap_ids=self.all_ids)   # controller.quorum.bootstrap.servers: every node
        m.node = node
        self.nodes[i] = node
        self.last_hw.pop(i, None)
        self.apply_output(i, node.tick(self.now))

    def crash(self, i: int) -> None:
        self._collect(self.nodes[i])
        self.nodes[i] = None
        self.tokens[i] = {}
        self.tick_at.pop(i, None)
        self.persist_at.pop(i, None)
        self.persisting[i] = 0
        self.disks[i].log.crash()
        self.stats["crashes"] += 1

    def send(self, src: int, dst: int, kind: str, *payload) -> None:
        if self.rng.random() < self.drop:
            self.stats["drops"] += 1
            if kind == "req" and self.rng.random() < 0.5:
                self.push(self.now + self.rng.randint(1, 30), "fail", src, self.incarnation[src], dst, payload[0])
            return
        copies = 2 if self.rng.random() < self.dup else 1
        self.stats["dups"] += copies - 1
        for _ in range(copies):
            self.push(self.now + self.rng.randint(1, self.params.max_delay_ms), kind, src, dst, *payload)

    def apply_output(self, i: int, out, reply=None) -> None:
        """Persist (on the node's ordered writer), then release the messages; ``reply`` is
        (requester, request, response) answered at once by handle_request. The committed
        items go to the node's state machine at once, in order (they are durable on a
        majority already)."""
        for item in out.committed:
            hand_to(self.machines[i], item)
        if out.must_persist or self.persist_at.get(i, 0) > self.now or self.persisting[i]:
            at = max(self.now, self.persist_at.get(i, 0)) + (self.rng.randint(0, 3) if out.must_persist else 0)
            self.persist_at[i] = at
            self.persisting[i] += 1
            self.push(at, "persisted", i, self.incarnation[i], out, reply)
        else:
            self.release(i, out, reply)
        if out.next_deadline_ms < (1 << 61):
            at = max(out.next_deadline_ms, self.now)
            if self.tick_at.get(i) != at:
                self.tick_at[i] = at
                self.push(at, "tick", i, at)

    def release(self, i: int, out, reply) -> None:
        for dst, req in out.sends:
            self.check_sent(i, req)
            self.send(i, dst, "req", req)
        if reply is not None:
            requester, req, resp = reply
            self.check_sent(i, resp, req)
            self.send(i, requester, "resp", req, resp)
        for token, resp in out.responses:
            entry = self.tokens[i].pop(token, None)
            if entry is not None:
                requester, req = entry
                self.check_sent(i, resp)
                self.send(i, requester, "resp", req, resp)

    def on_persisted(self, i: int, inc: int, out, reply) -> None:
        node = self.nodes[i]
        if node is None or self.incarnation[i] != inc:
            return  # crashed while writing: neither the write nor the messages happened
        self.persisting[i] -= 1
        d = self.disks[i]
        if out.quorum_state is not None:
            d.quorum.write(out.quorum_state)
        if out.flush_log_to is not None:
            d.log.flush()
        self.release(i, out, reply)
        if out.flush_log_to is not None:
            self.apply_output(i, node.handle_log_flushed(self.now))

    # ---------------------------------------------------------------- events

    def step(self) -> bool:
        if not self.queue:
            return False
        at, _seq, kind, payload = heapq.heappop(self.queue)
        self.now = max(self.now, at)
        self.events += 1
        getattr(self, "on_" + kind)(*payload)
        self.check()
        return True

    def on_tick(self, i: int, at: int) -> None:
        node = self.nodes[i]
        if node is None or self.tick_at.get(i) != at:
            return
        del self.tick_at[i]
        self.apply_output(i, node.tick(self.now))

    def on_req(self, src: int, dst: int, req) -> None:
        node = self.nodes[dst]
        if node is None or (src, dst) in self.blocked:
            return
        outcome = node.handle_request(src, req, self.now)
        if outcome.response is None:
            self.tokens[dst][outcome.token] = (src, req)
            self.apply_output(dst, outcome.output)
        else:
            self.apply_output(dst, outcome.output, (src, req, outcome.response))

    def on_resp(self, src: int, dst: int, req, resp) -> None:
        node = self.nodes[dst]
        if node is None or (src, dst) in self.blocked:
            return
        self.apply_output(dst, node.handle_response(src, req, resp, self.now))

    def on_fail(self, src: int, inc: int, dst: int, req) -> None:
        node = self.nodes[src]
        if node is None or self.incarnation[src] != inc:
            return
        self.apply_output(src, node.handle_send_failure(dst, req, self.now))

    def on_fault(self) -> None:
        if self.healed:
            return
        r = self.rng.random()
        down = [i for i in self.all_ids if self.nodes[i] is None]
        up = [i for i in self.all_ids if self.nodes[i] is not None]
        if r < 0.22 and up:
            self.crash(self.rng.choice(up))
        elif r < 0.45 and down:
            self.start(self.rng.choice(down))
        elif r < 0.60:
            side = set(self.rng.sample(self.all_ids, self.rng.randint(1, len(self.all_ids) - 1)))
            self.blocked = {(a, b) for a in self.all_ids for b in self.all_ids
                            if (a in side) != (b in side) and self.rng.random() < 0.9}
            self.stats["partitions"] += 1
        elif r < 0.72:
            self.blocked = set()
        elif r < 0.85:
            self.drop = self.rng.choice([0.0, 0.05, 0.2, 0.4])
            self.dup = self.rng.choice([0.0, 0.05, 0.2])
        elif r < 0.90 and self.params.dynamic:
            self.maybe_wipe(self.rng.choice(self.all_ids))
        else:
            leaders = [i for i in up if self.nodes[i].is_leader]
            for i in leaders:
                self.stats["resigns"] += 1
                self.apply_output(i, self.nodes[i].resign(self.now))
        if self.now < self.params.chaos_ms:
            self.push(self.now + self.rng.randint(1, 2 * self.params.fault_every_ms), "fault")

    def on_propose(self, repeat: bool = True) -> None:
        if self.healed:
            return
        for i in self.all_ids:
            node = self.nodes[i]
            if node is not None and node.is_leader:
                n = self.rng.randint(1, 3)
                try:
                    node.propose([str(self.rng.randint(-1000, 1000)).encode() for _ in range(n)], self.now)
                except NotLeaderError:
                    raise SimFailure(f"node {i} is_leader but propose raised") from None
                self.proposed += n
                self.apply_output(i, node.tick(self.now))
        if repeat and self.now < self.params.chaos_ms:
            self.push(self.now + self.rng.randint(1, 2 * self.params.propose_every_ms), "propose")

    # ---------------------------------------------------------------- dynamic quorum (KIP-853)

    def maybe_wipe(self, i: int) -> None:
        """Wipe node i's disk (up or down): it comes back with a new directory id. Only
        while every other node is up and every voter set in effect keeps a majority
        without i's old identity and the other wiped ones (else no leader could ever
        remove them: a liveness limit, not safety)."""
        others = [n for j, n in self.nodes.items() if j != i]
        if any(n is None or not len(n.voter_set) for n in others):
            return   # every other node up and knowing the voters, so the check below sees every set
        for n in others:
            vs = n.voter_set
            if vs.get(i) is not None and self._stale(vs) + 1 > len(vs) - vs.majority():
                return
        if self.nodes[i] is not None:
            self.crash(i)
        self.wipes[i] += 1
        self.disks[i] = Disk(directory_id=_dir(i, self.wipes[i]), joined=True)
        self.max_epoch[i] = 0
        self.stats["wipes"] += 1
        self.start(i)

    def _stale(self, vs: VoterSet) -> int:
        """Voters of ``vs`` whose directory no longer exists (wiped)."""
        return sum(1 for v in vs if v.directory_id != self.disks[v.voter_id].directory_id)

    def on_reconfig(self, repeat: bool = True) -> None:
        leader = next((n for n in self.nodes.values() if n is not None and n.is_leader), None)
        if leader is not None:
            self.reconfigure(leader)
        if repeat and not self.healed:
            self.push(self.now + self.rng.randint(1, 2 * self.params.reconfig_every_ms), "reconfig")

    def reconfigure(self, leader: RaftNode) -> None:
        vs = leader.voter_set
        stale = [v for v in vs if v.directory_id != self.disks[v.voter_id].directory_id]
        outside = [i for i in self.all_ids if vs.get(i) is None]
        r = self.rng.random()
        if stale:
            v = stale[0]
            error, offset = leader.remove_voter(v.voter_id, v.directory_id, self.now)
            kind = "voter-removes"
        elif outside and (r < 0.6 or len(vs) < 2):
            i = self.rng.choice(outside)
            error, offset = leader.add_voter(Voter(i, self.disks[i].directory_id), self.now)
            kind = "voter-adds"
        elif len(vs) > 1:
            v = self.rng.choice(list(vs))
            error, offset = leader.remove_voter(v.voter_id, v.directory_id, self.now)
            kind = "self-removals" if v.voter_id == leader.node_id else "voter-removes"
        else:
            return
        if offset is not None:
            self.stats[kind] += 1
        self.apply_output(leader.node_id, leader.tick(self.now))

    def check_voters(self) -> None:
        live = [n for n in self.nodes.values() if n is not None]
        for n in live:
            h = n.voter_log.history
            # (a restarted leader's own high watermark may lag what is committed anywhere)
            if n.is_leader and h.changes_from(max(n.high_watermark, self.truth.max_committed)) > 1:
                self.fail(f"leader {n.node_id} has two voter changes uncommitted (hw {n.high_watermark})")
        # the potential leaders: nodes whose log holds every committed entry (any other
        # loses every election to them); their voter sets and the committed one must
        # pairwise have meeting majorities
        end = self.truth.max_committed
        epoch = next((b[1] for base, b in self.truth.batches.items() if b[0] + 1 == end), None)
        if epoch is None:
            return
        holders = [n for n in live if n.log.end_offset >= end and n.log.start_offset <= end
                   and n.log.epoch_of(end - 1) == epoch]
        sets = [n.voter_set for n in holders] + [n.voter_log.history.at(end - 1) for n in holders[:1]]
        for a in sets:
            for b in sets:
                if len(a) and len(b) and a.majority() + b.majority() <= len(a.ids | b.ids):
                    self.fail(f"voter sets {a} and {b} allow disjoint majorities (committed end {end})")

    # ---------------------------------------------------------------- invariants

    def fail(self, msg: str) -> None:
        raise SimFailure(f"SEED={self.seed} t={self.now} event={self.events}: {msg}")

    def check_sent(self, i: int, msg, request=None) -> None:
        """Persist before send: nothing leaves that a crash of the sender could take back."""
        on_disk = self.disks[i].quorum.state
        if getattr(msg, "pre_vote", False) or getattr(request, "pre_vote", False):
            return   # KIP-996: a pre-vote and its answer claim nothing
        epoch = next((getattr(msg, f) for f in ("leader_epoch", "candidate_epoch", "current_leader_epoch")
                      if hasattr(msg, f)), None)
        persisted = on_disk.epoch if on_disk else 0
        if epoch is not None and epoch > persisted:
            self.fail(f"node {i} sent {type(msg).__name__} of epoch {epoch} with epoch {persisted} on disk")
        if getattr(msg, "vote_granted", False) and (on_disk is None or on_disk.voted_id != request.candidate_id):
            self.fail(f"node {i} granted a vote for {request.candidate_id} not on disk: {on_disk}")

    def check(self) -> None:
        for i in self.all_ids:
            d = self.disks[i]
            persisted = d.quorum.state.epoch if d.quorum.state else 0
            if persisted < self.max_epoch[i]:
                self.fail(f"node {i} epoch went down {self.max_epoch[i]} -> {persisted}")
            self.max_epoch[i] = persisted
            start = d.log.start_offset
            if start > 0 and start not in {s.offset for s in d.snapshots.list()}:
                self.fail(f"node {i} log starts at {start}, snapshots {d.snapshots.list()}")
            node = self.nodes[i]
            if node is None:
                continue
            if node.epoch < persisted or (node.epoch != persisted and not self.persisting[i]):
                self.fail(f"node {i} epoch {node.epoch} but persisted {persisted}")
            hw = node.high_watermark
            if hw < self.last_hw.get(i, 0):
                self.fail(f"node {i} high watermark went down {self.last_hw[i]} -> {hw}")
            self.last_hw[i] = hw
            if node.is_leader:
                owner = self.leaders.setdefault(node.epoch, i)
                if owner != i:
                    self.fail(f"two leaders in epoch {node.epoch}: {owner} and {i}")
                # a majority of the set that committed hw: the one in effect at hw - 1 or a later
                # one (a leader counts a set from the moment it is written; single changes keep
                # the majorities of consecutive sets meeting)
                sets = node.voter_log.history.sets_from(hw - 1) if self.params.dynamic else [node.voter_set]
                held = [self._holders(vs, hw) for vs in sets]
                if all(h < vs.majority() for h, vs in zip(held, sets, strict=True)):
                    self.fail(f"leader {i} high watermark {hw} held by {held} of {sets} only")
        if self.params.dynamic:
            self.check_voters()

    def _holders(self, vs: VoterSet, hw: int) -> int:
        return sum(1 for v in vs if self.disks[v.voter_id].log.flushed_end_offset >= hw
                   or (self.disks[v.voter_id].snapshots.latest() or (0, 0))[0] >= hw
                   or v.directory_id != self.disks[v.voter_id].directory_id)  # wiped since: counted

    # ---------------------------------------------------------------- phases

    def run(self) -> dict:
        p = self.params
        self.push(1, "fault")
        self.push(1, "propose")
        if p.dynamic:
            self.push(1, "reconfig")
        while self.queue and self.now < p.chaos_ms:
            self.step()
        # heal: no faults, everyone up
        self.healed = True
        self.blocked = set()
        self.drop = self.dup = 0.0
        for i in self.all_ids:
            if self.nodes[i] is None:
                self.start(i)
        deadline = self.now + p.liveness_ms
        target = None  # (leader id, epoch, end offset) of the write that must commit everywhere
        while self.now < deadline:
            leader = next((n for n in self.nodes.values() if n.is_leader and self._leader_ready(n)), None)
            if leader is not None and (target is None or target[:2] != (leader.node_id, leader.epoch)):
                target = (leader.node_id, leader.epoch, leader.propose([b"7"], self.now) + 1)
                self.apply_output(leader.node_id, leader.tick(self.now))
            elif target is not None and self._committed_everywhere(target):
                break
            if not self.step():
                self.fail("event queue ran dry")
        else:
            self.fail(f"no progress after healing: target={target} "
                      f"states={[(i, n.state_name, n.epoch, n.high_watermark) for i, n in self.nodes.items()]} "
                      f"applied={[m.applied for m in self.machines.values()]}")
        for n in self.nodes.values():
            self._collect(n)
        self.stats["elections"] = len(self.leaders)
        self.stats["snapshot_loads"] = sum(m.loads for m in self.machines.values())
        self.stats["events"] = self.events
        self.stats["committed"] = self.truth.max_committed
        return self.stats

    def _collect(self, node: RaftNode) -> None:
        for k in ("snapshots-fetched", "diverging-truncations", "log-start-advances", "invalid-log-resets"):
            self.stats[k] = self.stats.get(k, 0) + node.metrics[k]

    def _committed_everywhere(self, target) -> bool:
        _leader, epoch, end = target
        if not all(m.applied >= end for m in self.machines.values()):
            return False
        base = max(b for b in self.truth.batches if b < end)
        return self.truth.batches[base][1] == epoch

    def _leader_ready(self, leader: RaftNode) -> bool:
        return self.machines[leader.node_id].applied >= leader.high_watermark


def _dir(node_id: int, generation: int) -> bytes:
    """The directory id of node_id's disk after ``generation`` wipes."""
    return struct.pack(">QQ", node_id + 1, generation + 1)


def run_seed(seed: int, params: SimParams | None = None) -> dict:
    params = params or params_for(seed)
    sim = Simulation(seed, params)
    try:
        return sim.run()
    except SimFailure:
        raise
    except AssertionError as e:
        raise SimFailure(f"SEED={seed} t={sim.now} event={sim.events}: {e}") from e


def params_for(seed: int, long: bool = False) -> SimParams:
    """The shape a seed runs with: 3 voters + 1 observer, or 5 voters + 2 observers; every
    other seed with a dynamic quorum (KIP-853), from 1 or 3 bootstrap voters of 4 nodes."""
    if seed % 2 == 1:
        one = seed % 4 == 1
        base = SimParams(voters=1 if one else 3, observers=3 if one else 1, dynamic=True)
    else:
        five = seed % 5 >= 3
        base = SimParams(voters=5 if five else 3, observers=2 if five else 1)
    if long:
        return SimParams(base.voters, base.observers, chaos_ms=15_000, liveness_ms=30_000, dynamic=base.dynamic)
    return base
