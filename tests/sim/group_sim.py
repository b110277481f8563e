"""Deterministic simulation of the group coordinator (tierlog.group.GroupShard).

One seed drives everything. The REAL ``GroupShard`` is driven the way its shell
(``broker/group_coordinator.py``) drives it: an ``Output``'s records are
appended to a simulated ``__consumer_offsets`` partition, its answers leave
and its offsets are applied (``apply_committed``) only once the high watermark
passes them; an Output without records is answered once the latest write
before it is committed (at once if none is in flight); ``tick`` runs
every 100 ms. Coordinator failover: the log keeps its committed prefix and
possibly some of the uncommitted tail (a new leader may have replicated it),
in whole batches (the shell appends each Output's records as one batch), the rest is lost with its answers (their callers get
NOT_COORDINATOR); after a load delay a new shard is rebuilt by ``replay`` -ing that log, then ``loaded``.

Members (one group, one topic of P partitions) are sequential actors (one request
in flight, as clients are), over a network with random delays:

- classic: the two-step JoinGroup, an eager client-side range assignor run by the
  leader, SyncGroup, Heartbeat, LeaveGroup; before rejoining a member commits
  and revokes what it holds;
- consumer (KIP-848): ConsumerGroupHeartbeat with the server-side assignor; a
  member takes added partitions at once and revokes removed ones after a
  random delay (committing first), reporting what it owns.

Faults (first phase): members join, leave, crash silently (session timeout),
pause (late heartbeats, sometimes beyond the session timeout), commit offsets;
coordinator failover; an operator's explicit offset reset (a generation -1
commit, accepted only while the group is empty); with ``write_faults``, spells
in which writes are refused before the log (ISR below min.insync.replicas: the
answers get COORDINATOR_NOT_AVAILABLE and the shard is reloaded from the log) and
writes that are not committed in time (their answers get the error, the shard
takes back what ``Output.on_failure`` names; the records stay in the log, and
their offset commits take effect once the high watermark passes them, as the
shell does). Then the faults heal.

Invariants after every event:
- classic: in each generation, the assignments members received are disjoint;
- consumer: no partition in two members' current assignments (owned: assigned
  or pending revocation) at once, and every client holds only what the
  coordinator records it owns;
- offsets seen through OffsetFetch never go backwards, except by an explicit reset
  and on a partition whose commit timed out (its committer was told it failed,
  another member may have started from the older offset, and the commit then
  takes effect: at-least-once, as in Kafka);
- after healing, within ``converge_ms``, every live member is Stable (classic:
  all in the group's latest generation, Stable, with assignments covering
  every partition; consumer: each member's current assignment is its target).

Replay a failure: ``TIERLOG_SIM_SEED=<n> pytest tests/sim/test_group_sim.py``.
"""
from __future__ import annotations

import heapq
import random
import uuid

from tierlog.group import (
    ClassicGroup,
    ConsumerGroup,
    GroupConfig,
    GroupShard,
    GroupState,
    TopicsView,
    with_error,
)
from tierlog.protocol.errors import ErrorCode as E

GROUP, TOPIC, TID = "g", "t", b"\x07" * 16
TICK_MS = 100
SESSION_MS, HEARTBEAT_MS, REBALANCE_MS = 3000, 1000, 4000
RETRY_MS = 100
COORD_ERRORS = {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS}


class SimFailure(AssertionError):
    pass


def _assignment_bytes(parts) -> bytes:
    return ",".join(str(p) for p in sorted(parts)).encode()


def _parts(data: bytes) -> frozenset[int]:
    return frozenset(int(x) for x in data.decode().split(",") if x)


class Coordinator:
    """The shell's part: the log, the high watermark, answers parked until it passes them."""

    def __init__(self, sim: Sim):
        self.sim = sim
        self.log: list[tuple[bytes, bytes | None]] = []
        self.hw = 0
        self.parked: list[tuple[int, list, list, list]] = []     # (end offset, answers, on_commit, on_failure)
        self.waiting: dict[object, None] = {}               # tokens not answered yet (in order)
        self.batches: list[int] = [0]                       # batch end offsets: an Output's records are one batch
        self.shard: GroupShard | None = None
        self.generation = 0                                 # coordinator incarnations
        self.refusing_until = 0                             # writes are refused before then
        self.time_out_next = False                          # the oldest write in flight will time out
        self.late: list[tuple[int, list]] = []              # (end offset, on_commit) of timed-out writes
        self._load(0)

    def _load(self, now: int) -> None:
        shard = GroupShard(0, self.sim.config, random.Random(self.sim.rng.getrandbits(64)))
        for key, value in self.log:
            shard.replay(key, value)
        shard.loaded(now)
        self.shard = shard

    def call(self, fn, token, now: int) -> None:
        """A request reaches the coordinator: ``fn(shard, token, now) -> Output``."""
        if self.shard is None:
            return self.sim.reply(token, None, now)
        self.waiting[token] = None
        self.emit(fn(self.shard, token, now), now)

    def emit(self, out, now: int) -> None:
        if out.records and now < self.refusing_until:
            return self._refuse(out, now)
        if not out.records:
            if self.parked and self.sim.answers_wait_for_writes:    # the shell's rule: they wait for the latest write in flight
                self.parked[-1][1].extend(out.answers)
            else:
                for token, resp in out.answers:
                    self.answer(token, resp, now)
            return
        self.log += out.records
        self.batches.append(len(self.log))
        self.parked.append((len(self.log), out.answers, out.on_commit, out.on_failure))

    def _refuse(self, out, now: int) -> None:
        """The shell's rule: the answers carry the error, then the shard is loaded again from the log
        (its memory holds what the refused write changed); requests meanwhile get NOT_COORDINATOR."""
        for token, resp in out.answers:
            self.answer(token, with_error(resp, E.COORDINATOR_NOT_AVAILABLE), now)
        self.sim.stats["refused_writes"] += 1
        if not self.sim.reload_after_refusal:
            return                        # the shell's old rule (a bug): the shard kept what was refused
        self._drop(now)
        incarnation = self.generation
        self.sim.at(now + self.sim.rng.randint(10, 200),
                    lambda t: self._load(t) if self.generation == incarnation and self.shard is None else None)

    def _drop(self, now: int) -> None:
        for token in self.waiting:        # parked answers and requests waiting in the shard alike
            self.sim.reply(token, None, now)
        self.waiting, self.parked, self.late = {}, [], []
        self.shard = None
        self.generation += 1

    def _time_out(self, now: int) -> None:
        """The oldest write in flight is not committed in time: its records stay in the log."""
        end, answers, on_commit, on_failure = self.parked.pop(0)
        self.late.append((end, on_commit))
        self.sim.uncertain |= {key.partition for key, _ in on_commit}
        for token, resp in answers:
            self.answer(token, with_error(resp, E.COORDINATOR_NOT_AVAILABLE), now)
        self.sim.stats["write_timeouts"] += 1
        self.emit(self.shard.write_failed(on_failure, now), now)

    def replicate(self, now: int) -> None:
        if self.shard is None or self.hw == len(self.log):
            return
        if self.time_out_next and self.parked:
            self.time_out_next = False
            return self._time_out(now)
        self.hw = self.sim.rng.choice([b for b in self.batches if b > self.hw])
        while self.parked and self.parked[0][0] <= self.hw:
            _, answers, on_commit, _ = self.parked.pop(0)
            self._apply_late()
            self.shard.apply_committed(on_commit)
            for token, resp in answers:
                self.answer(token, resp, now)
        self._apply_late()

    def _apply_late(self) -> None:
        while self.late and self.late[0][0] <= self.hw:
            self.shard.apply_committed(self.late.pop(0)[1])

    def answer(self, token, resp: dict, now: int) -> None:
        if token in self.waiting:
            del self.waiting[token]
            self.sim.reply(token, resp, now)

    def fail(self, now: int) -> int:
        """The coordinator dies; a new leader keeps the committed prefix and maybe more. Load delay."""
        kept = self.sim.rng.choice([b for b in self.batches if b >= self.hw])    # whole batches survive or not
        lost = len(self.log) - kept
        self.log = self.log[:kept]
        self.batches = [b for b in self.batches if b <= kept]
        self.hw = kept
        self._drop(now)
        return lost

    def recover(self, now: int) -> None:
        self._load(now)

    def tick(self, now: int) -> None:
        if self.shard is not None:
            for out in self.shard.tick(now):
                self.emit(out, now)


class Member:
    """One client process. ``held``: partitions it consumes; ``position``: its next offsets."""

    def __init__(self, sim: Sim, name: str):
        self.sim, self.name = sim, name
        self.member_id = ""
        self.epoch = 0                  # classic: generation; consumer: member epoch
        self.state = "joining"          # classic: joining | syncing | stable; consumer: always "hb"
        self.held: frozenset[int] = frozenset()
        self.position: dict[int, int] = {}
        self.busy = False
        self.alive = True
        self.paused_until = 0
        self.leaving = False
        self.next_hb = 0
        self.next_commit = 0
        self.revoke_at: int | None = None
        self.assigned: frozenset[int] | None = None     # consumer: the last assignment received
        self.unfetched: set[int] = set()                # held, committed offset not read yet (coordinator down)
        self.wanted_wake: int | None = None

    def fetched(self) -> list[int]:
        return sorted(p for p in self.held if p not in self.unfetched)

    def can_act(self, now: int) -> bool:
        return self.alive and not self.busy and now >= self.paused_until and not self.leaving

    def consume(self) -> None:
        for p in self.fetched():
            self.position[p] = self.position.get(p, 0) + self.sim.rng.randint(0, 5)


class Sim:
    def __init__(self, seed: int, protocol: str | None = None, fault_ms: int = 30_000, converge_ms: int = 40_000,
                 answers_wait_for_writes: bool = True, write_faults: bool = True, reload_after_refusal: bool = True):
        self.seed = seed
        self.rng = random.Random(seed)
        self.protocol = protocol or ("classic" if seed % 2 == 0 else "consumer")
        self.partitions = self.rng.choice([1, 3, 6, 8])
        self.config = GroupConfig(initial_rebalance_delay_ms=self.rng.choice([0, 0, 300]),
                                  min_session_timeout_ms=1000, max_session_timeout_ms=30_000,
                                  consumer_heartbeat_interval_ms=HEARTBEAT_MS,
                                  consumer_session_timeout_ms=SESSION_MS,
                                  consumer_assignors=(self.rng.choice(["uniform", "range"]), "range", "uniform"))
        self.view = TopicsView({TOPIC: (TID, self.partitions)}, version=1)
        self.fault_ms, self.converge_ms = fault_ms, converge_ms
        self.answers_wait_for_writes = answers_wait_for_writes     # False: the shell's old rule (a bug)
        self.write_faults = write_faults
        self.reload_after_refusal = reload_after_refusal
        self.now = 0
        self.events: list = []
        self.seq = 0
        self.coord = Coordinator(self)
        self.down_until: int | None = None
        self.members: list[Member] = []
        self.names = 0
        self.ledger: dict[int, dict[str, frozenset[int]]] = {}     # classic: generation -> member -> assignment
        self.floor: dict[int, int] = {}         # partition -> lowest offset OffsetFetch may show now
        self.uncertain: set[int] = set()        # partitions with a commit that timed out
        self.resets_in_flight = 0
        self.stats = {k: 0 for k in ("joins", "leaves", "crashes", "pauses", "failovers", "lost_records", "commits",
                                     "commits_ok", "resets", "resets_ok", "rebalances", "revocations",
                                     "refused_writes", "write_timeouts")}

    # -- the event loop ------------------------------------------------------------------------
    def at(self, t: int, fn) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, fn))

    def fail(self, msg: str) -> None:
        raise SimFailure(f"SEED={self.seed} protocol={self.protocol} t={self.now}: {msg}")

    def run(self) -> dict:
        for _ in range(self.rng.randint(2, 4)):
            self.add_member(0)
        self.at(TICK_MS, self.tick)
        self.at(self.rng.randint(200, 1500), self.fault)
        heal_at, deadline = self.fault_ms, self.fault_ms + self.converge_ms
        converged = None
        while self.events:
            t, _, fn = heapq.heappop(self.events)
            if t > deadline:
                break
            self.now = t
            fn(t)
            self.check()
            if t >= heal_at and self.down_until is None and self.converged():
                converged = t
                break
        if converged is None:
            self.fail(f"no convergence by {deadline} ms: {self.describe()}")
        self.stats["converge_ms"] = converged - heal_at
        return self.stats

    def tick(self, now: int) -> None:
        self.coord.replicate(now)
        self.coord.tick(now)
        self.at(now + TICK_MS, self.tick)

    def healing(self) -> bool:
        return self.now >= self.fault_ms

    # -- faults --------------------------------------------------------------------------------
    def fault(self, now: int) -> None:
        if self.healing():
            return
        self.at(now + self.rng.randint(100, 1500), self.fault)
        live = [m for m in self.members if m.alive and not m.leaving]
        r = self.rng.random()
        if r < 0.2 or not live:
            self.add_member(now)
        elif r < 0.3:
            self.leave(self.rng.choice(live), now)
        elif r < 0.4:
            m = self.rng.choice(live)
            m.alive = False                 # silent: the coordinator finds out at its session timeout
            self.stats["crashes"] += 1
        elif r < 0.55:
            m = self.rng.choice(live)
            m.paused_until = now + self.rng.choice([500, 1500, 2500, 3500, 6000])
            self.stats["pauses"] += 1
            self.at(m.paused_until, lambda t, m=m: self.wake(m, t))
        elif r < 0.65 and self.down_until is None:
            self.stats["lost_records"] += self.coord.fail(now)
            self.stats["failovers"] += 1
            self.down_until = now + self.rng.randint(50, 600)
            self.at(self.down_until, self.recover)
        elif r < 0.72:
            self.reset_offsets(now)
        elif r < 0.78:
            for m in live:
                self.leave(m, now)
            self.at(now + self.rng.randint(200, 800), self.reset_offsets)     # while the group is empty
        elif r < 0.84 and self.write_faults:
            self.coord.refusing_until = now + self.rng.randint(100, 1500)
        elif r < 0.9 and self.write_faults:
            self.coord.time_out_next = True

    def recover(self, now: int) -> None:
        self.coord.recover(now)
        self.down_until = None

    def add_member(self, now: int) -> None:
        self.names += 1
        m = Member(self, f"m{self.names}")
        if self.protocol == "consumer":
            m.member_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            m.state = "hb"
        self.members.append(m)
        self.stats["joins"] += 1
        self.at(now + self.rng.randint(0, 50), lambda t: self.wake(m, t))

    def leave(self, m: Member, now: int) -> None:
        """A clean shutdown: commit, then leave (after any request in flight), then the process ends."""
        m.leaving = True
        self.stats["leaves"] += 1
        self.at(now, lambda t: self._leave_when_idle(m, t))

    def _leave_when_idle(self, m: Member, now: int) -> None:
        if not m.alive:
            return
        if m.busy or now < m.paused_until:
            return self.at(max(now + 10, m.paused_until), lambda t: self._leave_when_idle(m, t))
        m.held, m.alive = frozenset(), False
        if not m.member_id:
            return
        if self.protocol == "classic":
            self.send(m, "leave", lambda s, tok, t: s.leave(GROUP, [(m.member_id, None)], tok, t), now)
        else:
            req = self._hb_req(m, -1)
            self.send(m, "leave", lambda s, tok, t: s.consumer_heartbeat(req, tok, t, self.view), now)

    def reset_offsets(self, now: int) -> None:
        """An operator's reset (generation -1 commit): accepted only while the group is empty."""
        p = self.rng.randrange(self.partitions)
        offset = self.rng.randint(0, 3)
        req = {"GroupId": GROUP, "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
               "RetentionTimeMs": -1, "version": 9, "Topics": [{"Name": TOPIC, "Partitions": [
                   {"PartitionIndex": p, "CommittedOffset": offset, "CommittedLeaderEpoch": -1,
                    "CommittedMetadata": ""}]}]}
        self.stats["resets"] += 1
        self.resets_in_flight += 1
        self.send(None, "reset", lambda s, tok, t: s.commit_offsets(req, tok, t), now)

    # -- the network ---------------------------------------------------------------------------
    def delay(self) -> int:
        return self.rng.randint(1, 30)

    def send(self, m: Member | None, kind: str, fn, now: int) -> None:
        if m is not None:
            m.busy = True
        token = (m, kind, object())
        self.at(now + self.delay(), lambda t: self._arrive(fn, token, t))

    def _arrive(self, fn, token, now: int) -> None:
        self.coord.call(fn, token, now)

    def reply(self, token, resp: dict | None, now: int) -> None:
        """``resp`` None: the coordinator is gone (NOT_COORDINATOR / a closed connection)."""
        self.at(now + self.delay(), lambda t: self._deliver(token, resp, t))

    def _deliver(self, token, resp, now: int) -> None:
        m, kind, _ = token
        if kind == "reset":
            self.resets_in_flight -= 1
            if resp is not None and resp["Topics"][0]["Partitions"][0]["ErrorCode"] == E.NONE:
                self.stats["resets_ok"] += 1
            if not self.resets_in_flight:
                self.floor = self.offsets()
            return
        if m is None or not m.alive:
            return
        m.busy = False
        getattr(self, f"_on_{self.protocol}_{kind}")(m, resp, now)
        self.wake(m, now)

    # -- members' behaviour ------------------------------------------------------------------------
    def wake(self, m: Member, now: int) -> None:
        if not m.can_act(now):
            return
        if m.unfetched:
            self._take(m, ())
            if m.unfetched:
                self._later(m, now + RETRY_MS)
        if self.protocol == "classic":
            self._act_classic(m, now)
        else:
            self._act_consumer(m, now)

    def _later(self, m: Member, t: int) -> None:
        if m.wanted_wake is None or m.wanted_wake <= self.now or t < m.wanted_wake:
            m.wanted_wake = t
            self.at(t, lambda tt: self.wake(m, tt))

    def _commit(self, m: Member, now: int, epoch: int, then: str = "commit") -> None:
        m.consume()
        parts = m.fetched()
        req = {"GroupId": GROUP, "GenerationIdOrMemberEpoch": epoch, "MemberId": m.member_id,
               "GroupInstanceId": None, "RetentionTimeMs": -1, "version": 9, "Topics": [{"Name": TOPIC, "Partitions": [
                   {"PartitionIndex": p, "CommittedOffset": m.position[p], "CommittedLeaderEpoch": -1,
                    "CommittedMetadata": ""} for p in parts]}]}
        self.stats["commits"] += 1
        self.send(m, then, lambda s, tok, t: s.commit_offsets(req, tok, t), now)

    def _take(self, m: Member, parts) -> None:
        """Start consuming partitions from their committed offsets (OffsetFetch; retried while the
        coordinator is down)."""
        m.unfetched |= set(parts)
        m.unfetched &= set(m.held) | set(parts)
        if self.coord.shard is None:
            return
        committed = self.offsets()
        for p in m.unfetched:
            m.position[p] = max(committed.get(p, 0), 0)
        m.unfetched = set()

    def _commit_answer_ok(self, resp) -> bool:
        return resp is not None and all(p["ErrorCode"] == E.NONE for t in resp["Topics"] for p in t["Partitions"])

    # classic
    def _act_classic(self, m: Member, now: int) -> None:
        if m.state == "joining":
            if m.held:                                  # eager: commit, then revoke, before joining
                return self._commit(m, now, m.epoch, then="revoke")
            req = {"GroupId": GROUP, "SessionTimeoutMs": SESSION_MS, "RebalanceTimeoutMs": REBALANCE_MS,
                   "MemberId": m.member_id, "GroupInstanceId": None, "ProtocolType": "consumer",
                   "Protocols": [{"Name": "range", "Metadata": b"t"}], "client_id": m.name, "client_host": "/",
                   "version": 5}
            return self.send(m, "join", lambda s, tok, t: s.join(req, tok, t), now)
        if m.state == "stable":
            if now >= m.next_hb:
                m.next_hb = now + HEARTBEAT_MS
                req = {"GroupId": GROUP, "GenerationId": m.epoch, "MemberId": m.member_id, "GroupInstanceId": None}
                return self.send(m, "heartbeat", lambda s, tok, t: s.heartbeat(req, tok, t), now)
            if now >= m.next_commit and m.held:
                m.next_commit = now + self.rng.randint(200, 1500)
                return self._commit(m, now, m.epoch)
            self._later(m, min(m.next_hb, m.next_commit if m.held else m.next_hb))

    def _rejoin(self, m: Member, reset_id: bool = False) -> None:
        if reset_id:
            m.member_id = ""
            m.held = frozenset()                        # lost, not revoked: no commit
        m.state = "joining"
        self.stats["rebalances"] += 1

    def _on_classic_revoke(self, m: Member, resp, now: int) -> None:
        m.held = frozenset()
        self.stats["revocations"] += 1
        if resp is not None and self._commit_answer_ok(resp):
            self.stats["commits_ok"] += 1

    def _on_classic_join(self, m: Member, resp, now: int) -> None:
        if resp is None:
            return self._later(m, now + RETRY_MS)
        code = resp["ErrorCode"]
        if code == E.MEMBER_ID_REQUIRED:
            m.member_id = resp["MemberId"]
            return
        if code == E.UNKNOWN_MEMBER_ID:
            return self._rejoin(m, reset_id=True)
        if code != E.NONE:
            return self._later(m, now + RETRY_MS)
        m.member_id, m.epoch, m.state = resp["MemberId"], resp["GenerationId"], "syncing"
        assignments = []
        if resp["Leader"] == m.member_id:             # the client-side range assignor
            ids = sorted(x["MemberId"] for x in resp["Members"])
            quota, extra = divmod(self.partitions, len(ids))
            start = 0
            for i, mid in enumerate(ids):
                n = quota + (1 if i < extra else 0)
                assignments.append({"MemberId": mid, "Assignment": _assignment_bytes(range(start, start + n))})
                start += n
        req = {"GroupId": GROUP, "GenerationId": m.epoch, "MemberId": m.member_id, "GroupInstanceId": None,
               "ProtocolType": "consumer", "ProtocolName": "range", "Assignments": assignments}
        self.send(m, "sync", lambda s, tok, t: s.sync(req, tok, t), now)

    def _on_classic_sync(self, m: Member, resp, now: int) -> None:
        if resp is None or resp["ErrorCode"] in COORD_ERRORS | {E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION}:
            return self._rejoin(m)
        if resp["ErrorCode"] != E.NONE:
            return self._rejoin(m, reset_id=True)
        parts = _parts(resp["Assignment"])
        gen = self.ledger.setdefault(m.epoch, {})
        for other, theirs in gen.items():
            if other != m.member_id and theirs & parts:
                self.fail(f"generation {m.epoch}: {m.member_id} got {sorted(parts)}, "
                          f"{other} already has {sorted(theirs)}")
        gen[m.member_id] = parts
        m.state, m.held = "stable", parts
        self._take(m, parts)
        m.next_hb = now + HEARTBEAT_MS
        m.next_commit = now + self.rng.randint(0, 1000)

    def _on_classic_heartbeat(self, m: Member, resp, now: int) -> None:
        code = E.NOT_COORDINATOR if resp is None else resp["ErrorCode"]
        if code in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
            self._rejoin(m)
        elif code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            self._rejoin(m, reset_id=True)
        elif code in COORD_ERRORS:
            m.next_hb = now + RETRY_MS

    def _on_classic_commit(self, m: Member, resp, now: int) -> None:
        if self._commit_answer_ok(resp):
            self.stats["commits_ok"] += 1

    def _on_classic_leave(self, m, resp, now) -> None:
        pass

    # consumer (KIP-848)
    def _hb_req(self, m: Member, epoch: int, full: bool = True) -> dict:
        return {"GroupId": GROUP, "MemberId": m.member_id, "MemberEpoch": epoch, "InstanceId": None, "RackId": None,
                "RebalanceTimeoutMs": REBALANCE_MS if epoch == 0 else -1,
                "SubscribedTopicNames": [TOPIC] if epoch == 0 or full else None, "SubscribedTopicRegex": None,
                "ServerAssignor": None,
                "TopicPartitions": ([] if epoch == 0 else [{"TopicId": TID, "Partitions": sorted(m.held)}]
                                    if m.held else []) if full or epoch == 0 else None,
                "client_id": m.name, "client_host": "/"}

    def _act_consumer(self, m: Member, now: int) -> None:
        if m.revoke_at is not None and now >= m.revoke_at:
            if m.held - (m.assigned or frozenset()):
                return self._commit(m, now, m.epoch, then="revoke")
            m.revoke_at = None
            m.next_hb = now                             # report the revocation at once
        if now >= m.next_hb:
            m.next_hb = now + HEARTBEAT_MS
            req = self._hb_req(m, m.epoch, full=self.rng.random() < 0.7)
            return self.send(m, "heartbeat", lambda s, tok, t: s.consumer_heartbeat(req, tok, t, self.view), now)
        if now >= m.next_commit and m.held and m.epoch > 0:
            m.next_commit = now + self.rng.randint(200, 1500)
            return self._commit(m, now, m.epoch)
        wake = [m.next_hb] + ([m.next_commit] if m.held else []) + ([m.revoke_at] if m.revoke_at else [])
        self._later(m, min(wake))

    def _on_consumer_revoke(self, m: Member, resp, now: int) -> None:
        if self._commit_answer_ok(resp):
            self.stats["commits_ok"] += 1
        m.held = m.held & (m.assigned or frozenset())
        self.stats["revocations"] += 1

    def _on_consumer_heartbeat(self, m: Member, resp, now: int) -> None:
        code = E.NOT_COORDINATOR if resp is None else resp["ErrorCode"]
        if code in COORD_ERRORS:
            m.next_hb = now + RETRY_MS
            return
        if code in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
            m.held, m.epoch, m.assigned, m.revoke_at = frozenset(), 0, None, None     # lost: rejoin at epoch 0
            m.next_hb = now
            self.stats["rebalances"] += 1
            return
        if code != E.NONE:
            self.fail(f"{m.name}: unexpected heartbeat error {code}: {resp}")
        m.epoch = resp["MemberEpoch"]
        if resp["Assignment"] is not None:
            new = frozenset(p for t in resp["Assignment"]["TopicPartitions"] for p in t["Partitions"])
            added = new - m.held
            m.assigned = new
            self._take(m, added)
            m.held = m.held | added
            if m.held - new:
                m.revoke_at = now + self.rng.choice([0, 0, 100, 800])
            elif added:
                m.next_hb = min(m.next_hb, now + HEARTBEAT_MS)

    def _on_consumer_commit(self, m: Member, resp, now: int) -> None:
        if self._commit_answer_ok(resp):
            self.stats["commits_ok"] += 1

    def _on_consumer_leave(self, m, resp, now) -> None:
        pass

    # -- invariants ---------------------------------------------------------------------------
    def offsets(self) -> dict[int, int]:
        if self.coord.shard is None:
            return {}
        topics = self.coord.shard.fetch_offsets(GROUP, [{"Name": TOPIC, "PartitionIndexes": list(
            range(self.partitions))}])["Topics"]
        return {p["PartitionIndex"]: p["CommittedOffset"] for t in topics for p in t["Partitions"]
                if p["CommittedOffset"] >= 0}

    def check(self) -> None:
        if self.coord.shard is None:
            return
        seen = self.offsets()
        if not self.resets_in_flight:
            for p, floor in self.floor.items():
                if seen.get(p, -1) < floor and p not in self.uncertain:
                    self.fail(f"partition {p}: committed offset went back from {floor} to {seen.get(p)}")
            self.floor = seen
        group = self.coord.shard.groups.get(GROUP)
        if isinstance(group, ConsumerGroup):
            owner: dict[int, str] = {}
            for member in group.members.values():
                for p in member.current.owned().get(TID, ()):
                    if p in owner:
                        self.fail(f"partition {p} owned by {owner[p]} and {member.member_id}")
                    owner[p] = member.member_id
            for m in self.members:
                if m.alive and m.member_id in group.members:
                    extra = m.held - group.members[m.member_id].current.owned().get(TID, frozenset())
                    if extra and m.epoch == group.members[m.member_id].epoch:
                        self.fail(f"{m.name} holds {sorted(extra)} the coordinator does not give it")

    def live(self) -> list[Member]:
        return [m for m in self.members if m.alive]

    def converged(self) -> bool:
        if self.coord.shard is None:            # reloading after a refused write
            return False
        group = self.coord.shard.groups.get(GROUP)
        live = self.live()
        if any(m.busy or m.paused_until > self.now for m in live):
            return False
        everything = frozenset(range(self.partitions))
        if isinstance(group, ClassicGroup):
            if not live:
                return group.state is GroupState.EMPTY or not group.members
            return (group.state is GroupState.STABLE and set(group.members) == {m.member_id for m in live}
                    and all(m.state == "stable" and m.epoch == group.generation
                            and m.held == _parts(group.members[m.member_id].assignment) for m in live)
                    and frozenset().union(*(m.held for m in live)) == everything)
        if isinstance(group, ConsumerGroup):
            if not live:
                return not group.members
            return (group.state == "Stable" and set(group.members) == {m.member_id for m in live}
                    and all(group.members[m.member_id].current.assigned.get(TID, frozenset())
                            == group.targets.get(m.member_id, {}).get(TID, frozenset()) == m.held for m in live)
                    and frozenset().union(*(m.held for m in live)) == everything)
        return not live

    def describe(self) -> str:
        group = self.coord.shard.groups.get(GROUP) if self.coord.shard else None
        members = [(m.name, m.member_id[:8], m.state, m.epoch, sorted(m.held), m.busy) for m in self.live()]
        if isinstance(group, ClassicGroup):
            return f"group {group.state.value} gen {group.generation} members {list(group.members)}; clients {members}"
        if isinstance(group, ConsumerGroup):
            return (f"group {group.state} epoch {group.group_epoch}/{group.assignment_epoch} members "
                    f"{[(k[:8], v.epoch, v.current) for k, v in group.members.items()]}; clients {members}")
        return f"no group; clients {members}"
