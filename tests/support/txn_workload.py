"""A Jepsen-style transactional workload over sockets, for ``txn_anomalies.check``.

On a running multi-process cluster (tests/integration/cluster.py ``Cluster``: one controller,
brokers that can be killed and restarted) and one topic of ``partitions`` partitions with
replication factor 3 and ``min.insync.replicas`` 2:

- ``producers`` confluent-kafka transactional producers (``txn-checker-<i>``), each a thread,
  run transactions of 1-4 records to random partitions, committing about three in four and
  aborting the rest; every value is unique (``<transactional id>-<n>-<j>``).  The outcome is what
  the client saw (txn_anomalies.py: ``commit``, ``abort`` or ``unknown``); a producer whose
  state is fatal or whose commit stayed unanswered is replaced by a new one with the same
  transactional id (its ``init_transactions`` fences the old one and ends its transaction).
- ``consumers`` read_committed consumers of one group, ``txn-checker``: partition p belongs to
  consumer ``p % consumers``, which ``assign()``s it at the group's committed offset (no
  subscription: a rebalance would move partitions between sessions at moments the checker
  cannot see) and commits its position synchronously every few polls, so the group
  coordinator's offsets are in the history.  Each session lasts a seeded number of polls, then
  the consumer closes and a new session resumes at the committed offsets.
- the nemesis, seeded, kill -9s one broker at a time: the leader of a random partition of the
  topic, the transaction coordinator of a random producer's transactional id, or the group
  coordinator of ``txn-checker`` (the first three faults are one of each kind), holds it down
  for 1-3 s, restarts it and waits for the topic's ISRs to be whole again before the next.

After ``seconds`` the producers finish their transaction and stop, the nemesis restarts what
is down, a fresh producer per transactional id ends whatever its predecessor left open, and a
drain consumer reads every partition from offset 0 to its last stable offset.  The seed fixes
every decision (records, partitions, commit or abort, session lengths, fault kinds, targets and
pauses); the interleaving with the cluster is not reproducible.
"""
from __future__ import annotations

import itertools
import random
import threading
import time
from dataclasses import dataclass, field

from cluster import Cluster, request, wait_for
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from txn_anomalies import History, Read, Session, Txn, Write

from tierlog.protocol.api import ApiKey

GROUP = "txn-checker"
KINDS = ("leader", "txn-coordinator", "group-coordinator")
CLIENT_TIMEOUT_S = 30           # each blocking transactional call
INIT_DEADLINE_S = 90            # a replacement producer's init_transactions through a failover
COMMIT_ATTEMPTS = 3             # a retriable commit error is retried this often, then the outcome is unknown
ISR_DEADLINE_S = 60             # a restarted broker is back in every ISR within this
CLUSTER_PROPS = {"transaction.state.log.num.partitions": "4", "offsets.topic.num.partitions": "4",
                 "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}


@dataclass
class Fault:
    kind: str
    broker: int
    down_s: float


@dataclass
class Recorder:
    """The history as the threads write it (under one lock)."""
    txns: list[Txn] = field(default_factory=list)
    sessions: list[tuple[int, Session]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    events: list[str] = field(default_factory=list)     # a timeline for a failure's message
    lock: threading.Lock = field(default_factory=threading.Lock)
    begun: itertools.count = field(default_factory=itertools.count)
    t0: float = field(default_factory=time.monotonic)

    def note(self, what: str) -> None:
        with self.lock:
            self.events.append(f"{time.monotonic() - self.t0:7.2f} {threading.current_thread().name}: {what}")

    def history(self) -> History:
        with self.lock:
            return History(list(self.txns), [s for _, s in sorted(self.sessions, key=lambda x: x[0])])


def create_topic(boot: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": boot})
    new = NewTopic(topic, partitions, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([new], request_timeout=15)[topic].result(timeout=30)


def _quiet(conf: dict) -> dict:
    """librdkafka logs every refused connection while a broker is down: critical only."""
    return {"log_level": 2, **conf}


class TxnProducer(threading.Thread):
    def __init__(self, boot: str, topic: str, partitions: int, tid: str, rng: random.Random,
                 rec: Recorder, stop: threading.Event):
        super().__init__(daemon=True, name=tid)
        self.boot, self.topic, self.partitions, self.tid, self.rng = boot, topic, partitions, tid, rng
        self.rec, self.stop, self.error = rec, stop, None
        self.replaced = 0

    def run(self) -> None:
        try:
            producer = new_producer(self.boot, self.tid, self.rec.note)
            for n in itertools.count():
                if self.stop.is_set():
                    return
                txn, healthy = self.one(producer, n)
                with self.rec.lock:
                    self.rec.txns.append(txn)
                if not healthy:
                    self.replaced += 1
                    producer = new_producer(self.boot, self.tid, self.rec.note)
        except Exception as e:      # noqa: BLE001 - run() reports it; the history up to here stays valid
            self.error = e

    def one(self, p: Producer, n: int) -> tuple[Txn, bool]:
        """One transaction: (its record, whether the producer can go on)."""
        parts = [self.rng.randrange(self.partitions) for _ in range(self.rng.randint(1, 4))]
        values = [f"{self.tid}-{n}-{j}" for j in range(len(parts))]
        commit = self.rng.random() < 0.75
        offsets: dict[str, int] = {}

        def delivered(err, msg):
            if err is None:
                offsets[msg.value().decode()] = msg.offset()

        asked_commit, outcome, healthy = False, "abort", True
        try:
            p.begin_transaction()
            for part, v in zip(parts, values):
                p.produce(self.topic, v.encode(), partition=part, on_delivery=delivered)
            if commit:
                asked_commit = True
                p.commit_transaction(CLIENT_TIMEOUT_S)
                outcome = "commit"
            else:
                p.flush(CLIENT_TIMEOUT_S)           # the aborted records reach the log
                p.abort_transaction(CLIENT_TIMEOUT_S)
        except KafkaException as e:
            self.rec.note(f"transaction {n}: {e.args[0]}")
            outcome, healthy = self.recover(p, asked_commit, e.args[0])
            self.rec.note(f"transaction {n}: {outcome}{'' if healthy else ', producer replaced'}")
        writes = tuple(Write(part, v, offsets.get(v)) for part, v in zip(parts, values))
        return Txn(self.tid, writes, outcome), healthy

    def recover(self, p: Producer, asked_commit: bool, err: KafkaError) -> tuple[str, bool]:
        """After a failed call: the outcome as far as the client knows, and whether ``p`` goes on."""
        for _ in range(COMMIT_ATTEMPTS if asked_commit and err.retriable() else 0):
            try:
                p.commit_transaction(CLIENT_TIMEOUT_S)
                return "commit", True
            except KafkaException as e:
                err = e.args[0]
                if not err.retriable():
                    break
        if err.txn_requires_abort():
            try:
                p.abort_transaction(CLIENT_TIMEOUT_S)
                return "abort", True            # a commit refused and the abort accepted: it did not commit
            except KafkaException:
                pass
        return ("unknown" if asked_commit else "abort"), False


def new_producer(boot: str, tid: str, note=lambda what: None) -> Producer:
    """A transactional producer, ``init_transactions`` retried through a coordinator's failover."""
    p = Producer(_quiet({"bootstrap.servers": boot, "transactional.id": tid, "linger.ms": 5,
                         "transaction.timeout.ms": 20000}))
    deadline = time.monotonic() + INIT_DEADLINE_S
    while True:
        try:
            p.init_transactions(CLIENT_TIMEOUT_S)
            return p
        except KafkaException as e:
            note(f"init_transactions: {e.args[0]}")
            if not e.args[0].retriable() or time.monotonic() > deadline:
                raise


class GroupReader(threading.Thread):
    def __init__(self, boot: str, topic: str, mine: list[int], name: str, rng: random.Random,
                 rec: Recorder, stop: threading.Event):
        super().__init__(daemon=True, name=name)
        self.boot, self.topic, self.mine, self.rng, self.rec, self.stop = boot, topic, mine, rng, rec, stop
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.session(self.rng.randint(20, 60))
        except Exception as e:      # noqa: BLE001 - run() reports it
            self.error = e

    def session(self, polls: int) -> None:
        c = Consumer(_quiet({"bootstrap.servers": self.boot, "group.id": GROUP, "isolation.level": "read_committed",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
        try:
            committed = c.committed([TopicPartition(self.topic, p) for p in self.mine], timeout=10)
        except KafkaException:
            c.close()           # the group coordinator is away: a later session asks again
            return
        with self.rec.lock:
            begun = next(self.rec.begun)
        start = {tp.partition: max(tp.offset, 0) for tp in committed}
        c.assign([TopicPartition(self.topic, p, o) for p, o in start.items()])
        reads, commits, position = [], [], {}
        for i in range(polls):
            for m in c.consume(100, 0.2):
                if m.error() is None:
                    reads.append(Read(m.partition(), m.offset(), m.value().decode()))
                    position[m.partition()] = m.offset() + 1
            if i % 10 == 9 and position:
                commits += self.commit(c, position)
        c.close()
        with self.rec.lock:
            self.rec.sessions.append((begun, Session(self.name, start, tuple(reads), tuple(commits))))

    def commit(self, c: Consumer, position: dict[int, int]) -> list[tuple[int, int]]:
        """The positions the group acknowledged ([] when the commit failed)."""
        try:
            done = c.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in position.items()],
                            asynchronous=False)
        except KafkaException:
            return []
        return [(tp.partition, tp.offset) for tp in done if tp.error is None]


class Nemesis:
    """kill -9 and restart one broker at a time (see the module docstring), on the calling thread:
    Linux sends a node its parent-death signal (tierlog.parent_watch) when the *thread* that
    started it ends, so a node restarted from a worker thread would stop with that thread."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int, tids: list[str], rng: random.Random,
                 rec: Recorder):
        self.cluster, self.topic, self.partitions, self.tids, self.rng, self.rec = (
            cluster, topic, partitions, tids, rng, rec)

    def run(self, seconds: float, interval_s: float, faults_min: int) -> None:
        """``interval_s`` of calm, then a fault, over and over, while ``seconds`` have not passed or
        fewer than ``faults_min`` faults were done (a restart takes as long as the machine's load
        makes it: a count, not a time, says what a short run covers)."""
        kinds = self.rng.sample(KINDS, len(KINDS))
        deadline, done = time.monotonic() + seconds, 0
        while time.monotonic() < deadline or done < faults_min:
            done += 1
            time.sleep(interval_s)          # the schedule's pause between faults
            self.fault(kinds.pop(0) if kinds else self.rng.choice(KINDS), self.rng.uniform(1, 3))

    def fault(self, kind: str, down_s: float) -> None:
        target = self.cluster.broker(self.target(kind))
        self.rec.note(f"kill -9 broker {target.node_id}, the {kind}")
        target.kill9()
        with self.rec.lock:
            self.rec.faults.append(Fault(kind, target.node_id, down_s))
        time.sleep(down_s)          # the fault's length, a seeded part of the schedule
        target.start()
        self.rec.note(f"broker {target.node_id} restarted")
        wait_for(self.isr_whole, ISR_DEADLINE_S, f"{self.topic}'s ISRs whole after restarting {target.node_id}")

    def target(self, kind: str) -> int:
        if kind == "leader":
            parts = wait_for(lambda: self.cluster.live_partitions(self.topic, self.partitions), 30, "metadata")
            return parts[self.rng.randrange(self.partitions)]["LeaderId"]
        key_type, key = (1, self.rng.choice(self.tids)) if kind == "txn-coordinator" else (0, GROUP)

        def ask():
            live = next(b for b in self.cluster.brokers if b.alive())
            found = request("127.0.0.1", live.port, ApiKey.FIND_COORDINATOR,
                            {"KeyType": key_type, "CoordinatorKeys": [key]}, version=4)["Coordinators"][0]
            return found["NodeId"] if found["ErrorCode"] == 0 else None
        return wait_for(ask, 30, f"the coordinator of {key}")

    def isr_whole(self) -> bool:
        parts = self.cluster.live_partitions(self.topic, self.partitions)
        return bool(parts) and all(len(p["IsrNodes"]) == 3 for p in parts)


@dataclass
class Run:
    history: History
    faults: list[Fault]
    errors: list[BaseException]
    replaced: int           # producers replaced after a fatal error or an unanswered commit
    events: list[str]       # the timeline: faults, failed calls, replaced producers


def run(cluster: Cluster, topic: str, seed: int, seconds: float, partitions: int = 4, producers: int = 3,
        consumers: int = 2, fault_interval_s: float = 2.0, faults_min: int = 0) -> Run:
    """The workload on ``cluster`` (its topic ``topic`` created here), then the drain."""
    boot = cluster.bootstrap
    create_topic(boot, topic, partitions)
    rng = random.Random(seed)
    rec, stop = Recorder(), threading.Event()
    tids = [f"txn-checker-{i}" for i in range(producers)]
    writers = [TxnProducer(boot, topic, partitions, t, random.Random(rng.random()), rec, stop) for t in tids]
    readers = [GroupReader(boot, topic, [p for p in range(partitions) if p % consumers == i], f"consumer-{i}",
                           random.Random(rng.random()), rec, stop) for i in range(consumers)]
    nemesis = Nemesis(cluster, topic, partitions, tids, random.Random(rng.random()), rec)
    threads = [*writers, *readers]
    for t in threads:
        t.start()
    try:
        nemesis.run(seconds, fault_interval_s, faults_min)
    finally:
        stop.set()
        for t in threads:
            t.join()
    rec.note("workload stopped")
    for tid in tids:            # whatever a replaced producer left open ends now
        new_producer(boot, tid, rec.note)
    rec.note("every transactional id ended")
    with rec.lock:
        rec.sessions.append((next(rec.begun), drain(boot, topic, partitions)))
    errors = [t.error for t in threads if t.error is not None]
    return Run(rec.history(), rec.faults, errors, sum(w.replaced for w in writers), rec.events)


def settled(boot: str, topic: str, partitions: int, committed: Consumer) -> dict[int, int] | None:
    """Each partition's last stable offset once it equals its high watermark (no transaction open)."""
    uncommitted = Consumer(_quiet({"bootstrap.servers": boot, "group.id": "txn-checker-drain"}))
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        lso = {tp.partition: committed.get_watermark_offsets(tp, timeout=15)[1] for tp in tps}
        high = {tp.partition: uncommitted.get_watermark_offsets(tp, timeout=15)[1] for tp in tps}
    except KafkaException:
        return None
    finally:
        uncommitted.close()
    return lso if lso == high else None


def drain(boot: str, topic: str, partitions: int, timeout_s: float = 60) -> Session:
    """Every partition from 0 to its last stable offset, read_committed, once no transaction is open."""
    c = Consumer(_quiet({"bootstrap.servers": boot, "group.id": "txn-checker-drain", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True}))
    try:
        end = wait_for(lambda: settled(boot, topic, partitions, c), 60, "no transaction open on any partition")
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        reads, done = [], {p for p, e in end.items() if e == 0}
        deadline = time.monotonic() + timeout_s
        while len(done) < partitions:
            assert time.monotonic() < deadline, f"the drain did not reach {end}; done {sorted(done)}"
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    reads.append(Read(m.partition(), m.offset(), m.value().decode()))
                elif m.error().code() == KafkaError._PARTITION_EOF and m.offset() >= end[m.partition()]:
                    done.add(m.partition())
        return Session("drain", dict.fromkeys(range(partitions), 0), tuple(reads), end=end)
    finally:
        c.close()
