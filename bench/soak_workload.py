"""The soak's clients, each a thread that records what it saw for the checker.

- ``SeqProducer``: an idempotent acks=all producer (confluent-kafka or kafka-python) writing
  ``<name>:<seq>`` (then ``|`` and padding, if asked) to partition ``seq % partitions``; every
  acknowledgement is kept with the partition, offset, value and the send and acknowledgement
  times (the recovery figures).
- ``GroupMember``: a subscribed consumer of a classic or a KIP-848 group, committing its
  position synchronously about every second; keeps every (partition, offset) it read.
- ``CommitWatch``: the committed offsets of each group, read about every second (they must
  never move backwards).
- ``TopicChurn``: creates a topic, reassigns its partition 0, deletes the topic created two
  rounds before; keeps what was acknowledged (the checker compares it with the metadata).
- ``Tiering``: turns the tiered topic's ``remote.storage.enable`` on after a delay.

The transactional producers and read_committed readers are tests/support/txn_workload.py's.
"""
from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from kafka import KafkaProducer

QUIET = {"log_level": 2}        # librdkafka logs every refused connection while a broker is down


@dataclass
class Ack:
    partition: int
    offset: int
    value: bytes
    sent: float
    acked: float


class IdempotenceLog(logging.Logger):
    """What librdkafka's idempotent producer says of epoch bumps, drains, gaps and implicit acks (its
    "eos" debug context, filtered), kept for the report: the why of a duplicate or a reordering."""

    KEEP = ("bump", "Bump", "gap", "drain", "Drain", "implicit", "OUT_OF_ORDER", "DUPLICATE", "UNKNOWN_PRODUCER",
            "skipped", "failed", "ERRSEQ", "DUPSEQ", "UNKPID",
            "fatal", "Fatal", "reset", "Reset")

    def __init__(self, owner: SeqProducer):
        super().__init__(f"rdkafka.{owner.name}")
        self.owner = owner

    def log(self, level, msg, *args, **kwargs) -> None:
        text = msg % args if args else str(msg)
        if any(k in text for k in self.KEEP) and len(self.owner.idemp_log) < 2000:
            self.owner.idemp_log.append(f"{self.owner.now():7.1f} {text}")


class SeqProducer(threading.Thread):
    """Sequence-numbered records, idempotent and acks=all (see the module docstring)."""

    def __init__(self, name: str, boot: str, topic: str, partitions: int, client: str, rate: float, t0: float,
                 pad: int = 0):
        super().__init__(daemon=True, name=name)
        self.pad = b"|" + b"x" * pad if pad else b""
        self.topic, self.partitions, self.client, self.pause_s, self.t0 = topic, partitions, client, 1 / rate, t0
        self.acks: list[Ack] = []
        self.errors: list[str] = []
        self.idemp_log: list[str] = []
        self.sent = 0
        self.stopping = threading.Event()
        if client == "kafka-python":
            self.kp = KafkaProducer(bootstrap_servers=boot.split(","), acks="all", enable_idempotence=True,
                                    linger_ms=5, retries=2**31 - 1, delivery_timeout_ms=600_000,
                                    request_timeout_ms=10_000, max_in_flight_requests_per_connection=5)
        else:
            self.ck = Producer({**QUIET, "bootstrap.servers": boot, "acks": "all", "enable.idempotence": True,
                                "linger.ms": 5, "message.timeout.ms": 600_000, "retry.backoff.ms": 100,
                                "debug": "eos", "log_level": 7, "logger": IdempotenceLog(self)})

    def now(self) -> float:
        return time.monotonic() - self.t0

    def value(self, seq: int) -> bytes:
        return f"{self.name}:{seq}".encode() + self.pad

    def run(self) -> None:
        while not self.stopping.is_set():
            seq = self.sent
            if self.client == "kafka-python":
                self._send_kp(seq)
            else:
                self._send_ck(seq)
            self.sent = seq + 1
            time.sleep(self.pause_s)

    def _send_ck(self, seq: int) -> None:
        sent = self.now()

        def done(err, msg):
            if err is not None:
                self.errors.append(f"{self.now():.1f}s seq {seq}: {err}")
            else:
                self.acks.append(Ack(msg.partition(), msg.offset(), msg.value(), sent, self.now()))
        while True:
            try:
                self.ck.produce(self.topic, self.value(seq), partition=seq % self.partitions, on_delivery=done)
                break
            except BufferError:
                self.ck.poll(0.1)
        self.ck.poll(0)

    def _send_kp(self, seq: int) -> None:
        sent, value = self.now(), self.value(seq)
        future = self.kp.send(self.topic, value=value, partition=seq % self.partitions)
        future.add_callback(lambda md: self.acks.append(Ack(md.partition, md.offset, value, sent, self.now())))
        future.add_errback(lambda e: self.errors.append(f"{self.now():.1f}s seq {seq}: {e!r}"))

    def finish(self, timeout_s: float) -> int:
        """Stop sending and flush; the records still unacknowledged (they count as never acknowledged)."""
        self.stopping.set()
        self.join(10)
        if self.client == "kafka-python":
            try:
                self.kp.flush(timeout_s)
            except Exception as e:      # noqa: BLE001 - kafka-python raises its own timeout type
                self.errors.append(f"flush: {e!r}")
            self.kp.close(5)
            return 0 if not self.errors else len(self.errors)
        return self.ck.flush(timeout_s)


class GroupMember(threading.Thread):
    """One member of ``group`` (``protocol``: classic or consumer), committing about every second."""

    def __init__(self, name: str, boot: str, topic: str, group: str, protocol: str, t0: float):
        super().__init__(daemon=True, name=name)
        conf = {**QUIET, "bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "group.protocol": protocol}
        if protocol == "classic":
            conf.update({"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000})
        self.consumer = Consumer(conf)
        self.topic, self.group, self.t0 = topic, group, t0
        self.reads: set[tuple[int, int]] = set()
        self.commits: list[tuple[float, int, int]] = []         # (time, partition, offset) acknowledged
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic])
            position: dict[int, int] = {}
            last_commit = time.monotonic()
            while not self.stopping.is_set():
                for m in self.consumer.consume(200, 0.2):
                    if m.error() is None:
                        self.reads.add((m.partition(), m.offset()))
                        position[m.partition()] = m.offset() + 1
                if position and time.monotonic() - last_commit > 1:
                    self._commit(position)
                    position, last_commit = {}, time.monotonic()
        except Exception as e:      # noqa: BLE001 - reported by the checker
            self.error = e
        finally:
            self.consumer.close()

    def _commit(self, position: dict[int, int]) -> None:
        try:
            done = self.consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in position.items()],
                                        asynchronous=False)
        except KafkaException:
            return          # a rebalance or a coordinator away: the next commit carries the position
        now = time.monotonic() - self.t0
        self.commits += [(now, tp.partition, tp.offset) for tp in done if tp.error is None]


class CommitWatch(threading.Thread):
    """Each group's committed offsets over time: group -> [(time, {partition: offset})]."""

    def __init__(self, boot: str, topic: str, partitions: int, groups: list[str], t0: float):
        super().__init__(daemon=True, name="commit-watch")
        self.boot, self.topic, self.partitions, self.groups, self.t0 = boot, topic, partitions, groups, t0
        self.seen: dict[str, list[tuple[float, dict[int, int]]]] = {g: [] for g in groups}
        self.stopping = threading.Event()

    def run(self) -> None:
        readers = {g: Consumer({**QUIET, "bootstrap.servers": self.boot, "group.id": g}) for g in self.groups}
        tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        try:
            while not self.stopping.wait(1.0):
                for g, c in readers.items():
                    try:
                        got = c.committed(tps, timeout=5)
                    except KafkaException:
                        continue
                    self.seen[g].append((time.monotonic() - self.t0,
                                         {tp.partition: tp.offset for tp in got if tp.offset >= 0}))
        finally:
            for c in readers.values():
                c.close()


@dataclass
class Churn:
    created: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    reassigned: dict[str, list[int]] = field(default_factory=dict)
    uncertain: set[str] = field(default_factory=set)        # an operation without an answer
    log: list[str] = field(default_factory=list)


class TopicChurn(threading.Thread):
    def __init__(self, boot: str, brokers: list[int], rng: random.Random, period_s: float, t0: float):
        super().__init__(daemon=True, name="topic-churn")
        self.boot, self.brokers, self.rng, self.period_s, self.t0 = boot, brokers, rng, period_s, t0
        self.admin = AdminClient({**QUIET, "bootstrap.servers": boot})
        self.state = Churn()
        self.stopping = threading.Event()

    def note(self, what: str) -> None:
        self.state.log.append(f"{time.monotonic() - self.t0:7.1f} {what}")

    def run(self) -> None:
        n = 0
        while not self.stopping.wait(self.period_s):
            name = f"churn-{n}"
            self._create(name)
            if name in self.state.created:
                self._reassign(name)
            if n >= 2:
                self._drop(f"churn-{n - 2}")
            n += 1

    def _create(self, name: str) -> None:
        try:
            self.admin.create_topics([NewTopic(name, 2, 3)], request_timeout=15)[name].result(20)
            self.state.created.add(name)
            self.note(f"created {name}")
        except Exception as e:      # noqa: BLE001 - refused or unanswered during a fault
            self.state.uncertain.add(name)
            self.note(f"create {name}: {e}")

    def _drop(self, name: str) -> None:
        if name not in self.state.created:
            return
        try:
            self.admin.delete_topics([name], request_timeout=15)[name].result(20)
            self.state.deleted.add(name)
            self.note(f"deleted {name}")
        except Exception as e:      # noqa: BLE001
            self.state.uncertain.add(name)
            self.note(f"delete {name}: {e}")

    def _reassign(self, name: str) -> None:
        target = self.rng.sample(self.brokers, 3)
        plan = {"version": 1, "partitions": [{"topic": name, "partition": 0, "replicas": target}]}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(plan, f)
        out = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "reassign", "--execute", "--additional",
                              "--reassignment-json-file", f.name, "--bootstrap-server", self.boot],
                             capture_output=True, text=True, timeout=60, check=False)
        if out.returncode == 0:
            self.state.reassigned[name] = target
            self.note(f"reassigned {name}-0 to {target}")
        else:
            self.state.uncertain.add(name)
            self.note(f"reassign {name}: {out.stderr.strip()[-200:]}")


def turn_tiered(boot: str, topic: str, done: threading.Event) -> None:
    """remote.storage.enable=true on ``topic`` (an incremental alter, retried through faults)."""
    admin = AdminClient({**QUIET, "bootstrap.servers": boot})
    res = ConfigResource("topic", topic, incremental_configs=[])
    res.add_incremental_config(ConfigEntry("remote.storage.enable", "true",
                                           incremental_operation=AlterConfigOpType.SET))
    admin.incremental_alter_configs([res])[res].result(30)
    done.set()
