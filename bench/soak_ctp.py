"""The soak's transactional consume-transform-produce loop (KIP-98's exactly-once pipeline).

``CtpLoop``: a read_committed consumer of group ``soak-ctp`` on the data topic and a transactional
producer (``soak-ctp-0``); each batch it polls becomes one transaction writing
``<source partition>:<source offset>`` to the same partition of the output topic, with the
consumer's positions committed in it (``send_offsets_to_transaction``).  A failed transaction
is aborted and the consumer goes back to the group's committed offsets; a producer in a fatal
state is replaced (its successor's ``init_transactions`` fences it).

``exactly_once``: read_committed, the output holds each source offset of a partition once, and
exactly those below the group's committed offset: none lost, none twice, none without its
offset commit.
"""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from soak_workload import QUIET

GROUP, TID = "soak-ctp", "soak-ctp-0"
CALL_S = 30                 # each blocking transactional call


class CtpLoop(threading.Thread):
    def __init__(self, boot: str, source: str, sink: str, t0: float):
        super().__init__(daemon=True, name="ctp")
        self.boot, self.source, self.sink, self.t0 = boot, source, sink, t0
        self.committed = self.aborted = self.replaced = 0
        self.events: list[str] = []
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def note(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.t0:7.1f} {what}")

    def run(self) -> None:
        consumer = Consumer({**QUIET, "bootstrap.servers": self.boot, "group.id": GROUP, "enable.auto.commit": False,
                             "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        producer = self._producer()
        try:
            consumer.subscribe([self.source])
            while not self.stopping.is_set():
                batch = [m for m in consumer.consume(200, 0.5) if m.error() is None]
                if batch and not self._one(consumer, producer, batch):
                    producer = self._recover(consumer, producer)
        except Exception as e:      # noqa: BLE001 - reported by the checker
            self.error = e
        finally:
            consumer.close()

    def _producer(self) -> Producer:
        p = Producer({**QUIET, "bootstrap.servers": self.boot, "transactional.id": TID, "linger.ms": 5,
                      "transaction.timeout.ms": 20000})
        deadline = time.monotonic() + 120
        while True:
            try:
                p.init_transactions(CALL_S)
                return p
            except KafkaException as e:
                self.note(f"init_transactions: {e.args[0]}")
                if not e.args[0].retriable() or time.monotonic() > deadline:
                    raise

    def _one(self, consumer: Consumer, producer: Producer, batch) -> bool:
        """One transaction for ``batch``: True once committed."""
        positions: dict[int, int] = {}
        try:
            producer.begin_transaction()
            for m in batch:
                producer.produce(self.sink, f"{m.partition()}:{m.offset()}".encode(), partition=m.partition())
                positions[m.partition()] = m.offset() + 1
            producer.send_offsets_to_transaction([TopicPartition(self.source, p, o) for p, o in positions.items()],
                                                 consumer.consumer_group_metadata(), CALL_S)
            producer.commit_transaction(CALL_S)
            self.committed += 1
            return True
        except KafkaException as e:
            self.note(f"transaction: {e.args[0]}")
            return False

    def _recover(self, consumer: Consumer, producer: Producer) -> Producer:
        """Abort what is open (or replace a fenced or fatal producer), then rewind to the committed offsets."""
        try:
            producer.abort_transaction(CALL_S)
            self.aborted += 1
        except KafkaException as e:
            self.note(f"abort: {e.args[0]}; producer replaced")
            self.replaced += 1
            producer = self._producer()
        while not self.stopping.is_set():
            try:
                assigned = consumer.assignment()
                for tp in consumer.committed(assigned, timeout=10):
                    consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))
                return producer
            except KafkaException as e:
                self.note(f"rewind: {e.args[0]}")
                time.sleep(1)
        return producer


def exactly_once(outputs: dict[int, list[bytes]], committed: dict[int, int]) -> list[str]:
    """See the module docstring: ``outputs`` per output partition (read_committed), ``committed`` the
    group's final offsets of the source."""
    out: list[str] = []
    for p, values in sorted(outputs.items()):
        seen: dict[int, int] = {}
        for v in values:
            source_p, _, offset = v.decode().partition(":")
            if int(source_p) != p:
                out.append(f"ctp: {v!r} in output partition {p}")
            seen[int(offset)] = seen.get(int(offset), 0) + 1
        twice = sorted(o for o, n in seen.items() if n > 1)
        lost = sorted(set(range(committed.get(p, 0))) - set(seen))
        extra = sorted(o for o in seen if o >= committed.get(p, 0))
        if twice:
            out.append(f"ctp partition {p}: {len(twice)} source offsets written twice, first {twice[:5]}")
        if lost:
            out.append(f"ctp partition {p}: {len(lost)} source offsets below the committed {committed.get(p)} "
                       f"never written, first {lost[:5]}")
        if extra:
            out.append(f"ctp partition {p}: {len(extra)} source offsets written at or past the committed "
                       f"{committed.get(p)} (output committed without its offsets), first {extra[:5]}")
    return out
