"""Seeded simulation of one share-partition (``group/share_partition.py``, KIP-932) under
members that fetch, acknowledge (accept, release, reject, renew), stall past their locks, leave
and come back, while the log grows and the state is persisted (a ShareSnapshot, then
ShareUpdates) and now and then reloaded from what was persisted (a leader or share coordinator
failover: what was acquired is lost with its member's locks).  Each persisted change also goes
through the share coordinator's rules (``group/share_state.py``, WriteShareGroupState, a merged
snapshot every few updates) into its records; a leader failover reloads from what the
coordinator reads back (ReadShareGroupState at the next leader epoch), a coordinator failover
first rebuilds the coordinator from its records.

Invariants after every event (issue 37, item 6):
- a record is held by at most one member at a time (no acquisition of an offset still held);
- an accepted record is never delivered again;
- the delivery count of a record never decreases, and never passes the limit;
- the state rebuilt from the persisted records equals the live one (ACQUIRED read as AVAILABLE),
  both from the partition's own records and from what the share coordinator answers;
then a liveness phase: every member but one stops, time passes the locks, and the last member
gets every record not yet accepted or archived and accepts it, until the start offset reaches
the log's end.
"""
from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

from tierlog.group.share_partition import AcknowledgeType, RecordState, SharePartition, SharePartitionConfig
from tierlog.group.share_state import ShareStateShard
from tierlog.group.share_state_records import SharePartitionKey
from tierlog.protocol.errors import ErrorCode

CONFIG = SharePartitionConfig(record_lock_duration_ms=500, delivery_count_limit=4, max_record_locks=40)
MEMBERS = ("m0", "m1", "m2")
EVENTS = 400
LIVENESS_ROUNDS = 200
KEY = SharePartitionKey("sim", bytes(16), 0)
UPDATES_PER_SNAPSHOT = 4        # the coordinator merges often, so its snapshots are exercised


class SimFailure(AssertionError):
    pass


@dataclass
class Sim:
    seed: int
    rng: random.Random = field(init=False)
    sp: SharePartition = field(init=False)
    now: int = 0
    log_end: int = 0                                            # the log's end (exclusive)
    held: dict[int, str] = field(default_factory=dict)         # offset -> the member that was handed it
    accepted: set[int] = field(default_factory=set)
    archived: set[int] = field(default_factory=set)
    counts: dict[int, int] = field(default_factory=dict)       # the highest delivery count seen per offset
    snapshot: dict | None = None
    updates: list[dict] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    coordinator: ShareStateShard = field(init=False)
    coordinator_log: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    coordinator_log_start: int = 0          # the offset of coordinator_log[0]: pruned below it

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.sp = SharePartition(CONFIG)
        self.snapshot = self.sp.snapshot()
        self.coordinator = ShareStateShard(UPDATES_PER_SNAPSHOT)
        self._coordinated(self.coordinator.initialize(KEY, 0, 0, self.now))

    def fail(self, what: str) -> None:
        raise SimFailure(f"SEED={self.seed} t={self.now}: {what}")

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    # -- events -----------------------------------------------------------------------------------
    def run(self) -> dict[str, int]:
        for _ in range(EVENTS):
            self.step()
            self.check()
        self.liveness()
        return self.stats

    def step(self) -> None:
        r = self.rng.random()
        member = self.rng.choice(MEMBERS)
        if r < 0.15:
            self.log_end += self.rng.randint(1, 8)
        elif r < 0.45:
            self.fetch(member)
        elif r < 0.75:
            self.acknowledge(member)
        elif r < 0.85:
            self.now += self.rng.randint(1, 2 * CONFIG.record_lock_duration_ms)
            self.expire()
        elif r < 0.90:
            self.leave(member)
        elif r < 0.97:
            self.persist()
        else:
            self.failover()

    def fetch(self, member: str) -> None:
        for run in self.sp.acquire(member, self.log_end, self.rng.randint(1, 10), self.now):
            for offset in range(run.first_offset, run.last_offset + 1):
                if offset in self.held:
                    self.fail(f"offset {offset} handed to {member} while {self.held[offset]} holds it")
                if offset in self.accepted:
                    self.fail(f"accepted offset {offset} delivered again to {member}")
                if run.delivery_count <= self.counts.get(offset, 0):
                    self.fail(f"offset {offset}: delivery count {run.delivery_count} after {self.counts[offset]}")
                if run.delivery_count > CONFIG.delivery_count_limit:
                    self.fail(f"offset {offset} delivered {run.delivery_count} times")
                self.held[offset] = member
                self.counts[offset] = run.delivery_count
                self.count("deliveries" if run.delivery_count == 1 else "redeliveries")

    def acknowledge(self, member: str) -> None:
        mine = sorted(o for o, m in self.held.items() if m == member)
        if not mine:
            return
        offsets = self.rng.sample(mine, self.rng.randint(1, len(mine)))
        types = [self.rng.choice((AcknowledgeType.ACCEPT, AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE,
                                  AcknowledgeType.REJECT, AcknowledgeType.RENEW)) for _ in offsets]
        error = self.sp.acknowledge(member, [(o, o, [t]) for o, t in zip(offsets, types)], self.now)
        if error:
            self.fail(f"{member} could not acknowledge {offsets} it holds: {ErrorCode(error).name}")
        for offset, ack in zip(offsets, types):
            self.count(ack.name.lower())
            if ack is AcknowledgeType.RENEW:
                continue
            del self.held[offset]
            if ack is AcknowledgeType.ACCEPT:
                self.accepted.add(offset)
            elif ack is AcknowledgeType.REJECT or self.counts[offset] >= CONFIG.delivery_count_limit:
                self.archived.add(offset)

    def expire(self) -> None:
        for offset in self.sp.expire_locks(self.now):
            self.count("lock_expiries")
            self._lost(offset)

    def leave(self, member: str) -> None:
        self.count("leaves")
        for offset in self.sp.member_left(member):
            self._lost(offset)

    def _lost(self, offset: int) -> None:
        """The holder of ``offset`` lost it without acknowledging it."""
        if offset not in self.held:
            self.fail(f"offset {offset} released but nobody held it")
        del self.held[offset]
        if self.counts[offset] >= CONFIG.delivery_count_limit:
            self.archived.add(offset)

    def persist(self) -> None:
        if self.rng.random() < 0.2:
            self.snapshot, self.updates = self.sp.snapshot(), []
            self.write_state(self.snapshot)
            self.count("snapshots")
        else:
            update = self.sp.take_update()
            if update is not None:
                self.updates.append(update)
                self.write_state(update)
                self.count("updates")

    def write_state(self, value: dict) -> None:
        """WriteShareGroupState of a snapshot or an update to the share coordinator."""
        self._coordinated(self.coordinator.write(KEY, 0, self.sp.leader_epoch, value["StartOffset"],
                                                 value["StateBatches"], self.now))

    def _coordinated(self, answer: tuple[ErrorCode, list]) -> None:
        error, records = answer
        if error:
            self.fail(f"the share coordinator refused: {error.name}")
        self.coordinator_log += records

    def read_state(self, leader_epoch: int) -> dict:
        """ReadShareGroupState as a ShareSnapshotValue (the leader epoch recorded when it moved)."""
        error, state, records = self.coordinator.read(KEY, leader_epoch)
        if error or state is None:
            self.fail(f"the share coordinator could not read: {error.name}")
        self.coordinator_log += records
        return {"SnapshotEpoch": 0, "LeaderEpoch": leader_epoch, **state}

    def prune_coordinator_log(self) -> None:
        """The share coordinator's periodic prune: its records below ``prune_offset`` deleted."""
        cut = self.coordinator.prune_offset() - self.coordinator_log_start
        if cut < 0 or cut > len(self.coordinator_log):
            self.fail(f"prune offset {self.coordinator.prune_offset()} outside the log")
        del self.coordinator_log[:cut]
        self.coordinator_log_start += cut
        self.count("coordinator_records_pruned", cut)

    def failover(self) -> None:
        """A new leader loads what the share coordinator persisted (the coordinator itself
        rebuilt from its records first, half the time); the members' locks are gone."""
        self.persist_all()
        assert self.snapshot is not None, "a snapshot is written first"
        if self.rng.random() < 0.5:
            self.prune_coordinator_log()
            self.coordinator = ShareStateShard(UPDATES_PER_SNAPSHOT)
            for i, (key, value) in enumerate(self.coordinator_log):
                self.coordinator.replay(key, value, self.coordinator_log_start + i)
            self.count("coordinator_failovers")
        epoch = self.sp.leader_epoch + 1
        self.sp = SharePartition.from_persisted(CONFIG, self.read_state(epoch))
        self.snapshot, self.updates = self.sp.snapshot(), []
        for offset in self.held:
            if self.counts[offset] >= CONFIG.delivery_count_limit:
                self.archived.add(offset)       # delivered the last time allowed: archived, not redelivered
        self.held.clear()
        self.count("failovers")

    def persist_all(self) -> None:
        update = self.sp.take_update()
        if update is not None:
            self.updates.append(update)
            self.write_state(update)

    # -- invariants ------------------------------------------------------------------------------------
    def check(self) -> None:
        sp = self.sp
        for offset, member in self.held.items():
            if sp.holder(offset) != member or sp.state_of(offset)[0] is not RecordState.ACQUIRED:
                self.fail(f"offset {offset}: the member {member} holds it, the partition says {sp.state_of(offset)}")
        for offset in self.accepted | self.archived:
            state, count = sp.state_of(offset)
            at_limit = state is RecordState.AVAILABLE and count >= CONFIG.delivery_count_limit   # archived when met
            if offset >= sp.start_offset and state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) \
                    and not (offset in self.archived and at_limit):
                self.fail(f"offset {offset} done but {sp.state_of(offset)}")
        for offset in range(sp.start_offset, sp.end_offset):
            state, count = sp.state_of(offset)
            if count < self.counts.get(offset, 0):
                self.fail(f"offset {offset}: delivery count went back to {count}")
        self.check_reload()

    def check_reload(self) -> None:
        """The persisted records rebuild the live state (with what is acquired available)."""
        assert self.snapshot is not None, "a snapshot is written first"
        pending = self._pending_update()
        self.compare(SharePartition.from_persisted(CONFIG, self.snapshot, [*self.updates, *pending]), "reloaded")
        _error, state, _records = self.coordinator.read(KEY, -1)
        assert state is not None, "initialized at the start"
        coordinated = {"SnapshotEpoch": 0, "LeaderEpoch": self.sp.leader_epoch, **state}
        self.compare(SharePartition.from_persisted(CONFIG, coordinated, pending), "read from the coordinator")

    def compare(self, probe: SharePartition, what: str) -> None:
        if (probe.start_offset, probe.end_offset) != (self.sp.start_offset, self.sp.end_offset):
            self.fail(f"{what}: range {probe.start_offset}..{probe.end_offset} != "
                      f"{self.sp.start_offset}..{self.sp.end_offset}")
        for offset in range(self.sp.start_offset, self.sp.end_offset):
            state, count = self.sp.state_of(offset)
            live = RecordState.AVAILABLE if state is RecordState.ACQUIRED else state
            if probe.state_of(offset) != (live, count):
                self.fail(f"offset {offset}: {what} {probe.state_of(offset)} != live {(live, count)}")

    def _pending_update(self) -> list[dict]:
        """What the next ShareUpdate would hold, taken from a copy (the live one keeps it pending)."""
        update = copy.deepcopy(self.sp).take_update()
        return [] if update is None else [update]

    # -- liveness ---------------------------------------------------------------------------------------
    def liveness(self) -> None:
        """Everyone but m0 stops; past every lock, m0 gets and accepts every record still to do."""
        self.now += CONFIG.record_lock_duration_ms + 1
        self.expire()
        for _ in range(LIVENESS_ROUNDS):
            if self.sp.start_offset == self.log_end:
                break
            self.fetch("m0")
            mine = sorted(o for o, m in self.held.items() if m == "m0")
            if mine:
                if self.sp.acknowledge("m0", [(o, o, [AcknowledgeType.ACCEPT]) for o in mine], self.now):
                    self.fail(f"m0 could not accept {mine}")
                for o in mine:
                    del self.held[o]
                    self.accepted.add(o)
            self.check()
        if self.sp.start_offset != self.log_end:
            self.fail(f"liveness: the start offset stopped at {self.sp.start_offset} of {self.log_end}")
        missing = set(range(self.log_end)) - self.accepted - self.archived
        if missing:
            self.fail(f"liveness: offsets neither accepted nor archived: {sorted(missing)[:10]}")
