"""Deterministic simulation of transactions (KIP-98 with KIP-890's defences, transaction.version 2).

One seed drives everything (``txn_net.Net``).  The REAL cores run as their shells run them:
the transaction coordinator's rules and ``TransactionMetadata`` with the real
``__transaction_state`` codec (``txn_coordinator.py``), each partition's REAL
``ProducerStateManager`` and the aborted-transaction index entries (``txn_partitions.py``), the
REAL ``GroupShard`` for offsets committed in transactions, and the client's REAL
``AbortedFilter`` for read_committed reads (``txn_invariants.py``).

Actors: 2-4 transactional ids, each a transaction.version 2 producer (``txn_producers.py``)
writing to 1-4 partitions of a topic and sometimes committing a group's offsets in its
transaction; the leaders of those partitions and of the group's ``__consumer_offsets``
partition; the coordinator of the one ``__transaction_state`` partition.

Faults until ``fault_ms``: every request and answer may be dropped, duplicated, delayed (so
reordered) or stalled for seconds (Jepsen's delayed request: a Produce, TxnOffsetCommit or
WriteTxnMarkers delivered after its transaction ended, with the same producer id and epoch);
the coordinator fails over (the ``__transaction_state`` partition moves: the new leader keeps
the committed records and maybe some of the uncommitted tail, reloads them and resumes the
transactions it finds in Prepare*); a producer pauses (a zombie: a new instance with the same
transactional id may fence it meanwhile) or crashes (its transaction times out and the
coordinator aborts it; a new instance may start later).  Then the network heals, no new
transaction starts, and after ``settle_ms`` every transaction must be over.  The invariants
(``txn_invariants.py``) are checked after every event and once more at the end.

Deliberate bugs (``bugs``, names in ``BUGS``) show that each check can fail.

Replay a failure: ``TIERLOG_SIM_SEED=<n> pytest tests/sim/txn/test_txn_sim.py``.
"""
from __future__ import annotations

import random

from txn_coordinator import Coordinator, TxnStateLog
from txn_invariants import Checker, SimFailure
from txn_net import Net, NetFaults
from txn_partitions import OFFSETS, DataLeader, GroupLeader, SimPartition
from txn_producers import TOPIC, Producer

__all__ = ["Sim", "SimFailure"]

REPLICATE_MS = (10, 50)
FAULT_EVERY_MS = (100, 700)
LOAD_MS = (20, 300)
FIRST_PRODUCER_ID = 1000
BUGS = {
    "no_epoch_check": "leaders append writes and markers of fenced epochs",
    "offsets_epoch_unchecked": "leaders append TxnOffsetCommit batches of fenced epochs (found by this simulation)",
    "no_verification": "leaders skip KIP-890 part 1 (a TV2 producer's partitions are never added)",
    "marker_version_ignored": "leaders check markers as before KIP-1228 (found by this simulation)",
    "bad_marker": "the coordinator sends the opposite marker to a partition now and then",
    "no_abort_index": "leaders write no aborted-transaction index entries",
    "index_commits": "leaders index committed transactions as aborted ones",
    "offsets_at_once": "TxnOffsetCommit's offsets apply once written, as a plain commit",
    "early_end_answer": "EndTxn is answered before its Prepare* record is committed",
    "stale_hw": "a leader's high watermark goes back now and then (a new leader from a stale one)",
}
STALE_HW_P = 0.01


class Sim:
    def __init__(self, seed: int, *, fault_ms: int = 3000, settle_ms: int = 9000, faults: bool = True,
                 bugs: frozenset[str] = frozenset()):
        assert bugs <= BUGS.keys(), bugs
        self.seed = seed
        self.rng = random.Random(seed)
        self.net = Net(self.rng, NetFaults() if faults else NetFaults.none())
        self.fault_ms, self.settle_ms, self.faults, self.bugs = fault_ms, settle_ms, faults, bugs
        self.stats = {k: 0 for k in ("events", "commits", "aborts", "abortable", "fenced", "failovers", "pauses",
                                     "zombies", "crashes", "timeouts", "markers_sent", "bad_markers",
                                     "fenced_writes", "fenced_offset_commits", "stale_markers")}
        self.checker = Checker(self)
        self.num_partitions = self.rng.randint(1, 4)
        self.parts = {key: SimPartition(key, self.checker, self.stats, bugs)
                      for key in [(TOPIC, p) for p in range(self.num_partitions)] + [OFFSETS]}
        self.leaders = {key: DataLeader(self, part) for key, part in self.parts.items() if key != OFFSETS}
        self.group = self.leaders[OFFSETS] = GroupLeader(self, self.parts[OFFSETS])
        self.txn_log = TxnStateLog(self.checker.decided)
        self.coordinator_epoch = 0
        self.coordinator = Coordinator(self, self.txn_log, self.coordinator_epoch, 0)
        self._producer_ids = FIRST_PRODUCER_ID
        self._offset_values = 0
        self.instances: dict[str, int] = {}
        self.producers: list[Producer] = []
        for i in range(self.rng.randint(2, 4)):
            self._start(f"txn-{i}")

    # -- services the actors use -----------------------------------------------------------------
    def next_producer_id(self) -> int:
        self._producer_ids += 1
        return self._producer_ids

    def new_offset_value(self, txn: tuple[int, int]) -> int:
        self._offset_values += 1
        self.checker.offset_owner[self._offset_values] = txn
        return self._offset_values

    def producing(self) -> bool:
        return self.net.now < self.fault_ms

    def _start(self, tid: str) -> Producer:
        self.instances[tid] = self.instances.get(tid, -1) + 1
        producer = Producer(self, tid, self.instances[tid])
        self.producers.append(producer)
        return producer

    def replace(self, producer: Producer) -> None:
        """The application starts a new instance of a producer that was fenced or crashed."""
        if self.producing() and self.instances[producer.tid] == producer.instance:
            self.net.at(self.net.now + self.rng.randint(0, 1000), self._start, producer.tid)

    # -- the run -------------------------------------------------------------------------------------
    def run(self) -> dict:
        self.net.at(0, self._replicate)
        self.net.at(self.rng.randint(*FAULT_EVERY_MS), self._fault)
        self.net.at(self.fault_ms, self._heal)
        end = self.fault_ms + self.settle_ms
        while self.net.step(end):
            self.stats["events"] += 1
            self.checker.check()
        self.checker.final()
        self._check_settled()
        return self.stats

    def _replicate(self) -> None:
        for part in self.parts.values():
            part.replicate(self.rng)
            if "stale_hw" in self.bugs and self.rng.random() < STALE_HW_P and part.hw:
                part.hw = max(0, part.hw - 1 - self.rng.randint(0, 2))     # a deliberate bug
        log = self.txn_log
        if log.hw < len(log.entries):
            log.commit_to(self.rng.randint(log.hw + 1, len(log.entries)))
        self.net.at(self.net.now + self.rng.randint(*REPLICATE_MS), self._replicate)

    def _check_settled(self) -> None:
        coordinator = self.coordinator
        if coordinator.txns is None:
            self.checker.fail("the coordinator never finished loading")
        for meta in coordinator.txns.values():
            if meta.has_pending_transaction or meta.pending_transition_in_progress:
                self.checker.fail(f"{meta.transactional_id} still in {meta.state} after settling: {meta}")

    # -- faults ----------------------------------------------------------------------------------------
    def _heal(self) -> None:
        """No fault from now on; messages stalled before still arrive, up to ``NetFaults.stall_ms``
        later, and a Produce among them may open a transaction its coordinator then times out:
        ``settle_ms`` leaves time for that (stall + transaction timeout + the timeout check)."""
        self.net.faults = NetFaults.none()

    def _fault(self) -> None:
        if not self.producing():
            return
        self.net.at(self.net.now + self.rng.randint(*FAULT_EVERY_MS), self._fault)
        if not self.faults:
            return
        r = self.rng.random()
        live = [p for p in self.producers if p.alive]
        if r < 0.15:
            self._fail_over()
        elif r < 0.35 and live:
            self._pause(self.rng.choice(live))
        elif r < 0.42 and live:
            victim = self.rng.choice(live)
            victim.die()
            self.stats["crashes"] += 1
            if self.rng.random() < 0.7:
                self.replace(victim)

    def _fail_over(self) -> None:
        """The ``__transaction_state`` partition moves: the old leader stops, the new one loads."""
        self.stats["failovers"] += 1
        self.coordinator.stop()
        log = self.txn_log
        log.fail_over(self.rng.randint(log.hw, len(log.entries)))
        self.coordinator_epoch += 1
        self.coordinator = Coordinator(self, log, self.coordinator_epoch, self.rng.randint(*LOAD_MS))

    def _pause(self, producer: Producer) -> None:
        self.stats["pauses"] += 1
        producer.pause(self.rng.choice([300, 1000, 2500, 4000]))
        if self.rng.random() < 0.5:             # a new instance fences the paused one: a zombie
            self.stats["zombies"] += 1
            self._start(producer.tid)
