"""Small helpers around confluent-kafka for integration tests."""
from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, name: str, partitions: int = 1, configs: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})], request_timeout=15)
    futures[name].result(timeout=20)


def refused_metadata(conf: dict, *wanted: str, timeout_s: float = 4.0) -> str:
    """The errors librdkafka reports (error_cb) to an AdminClient of ``conf`` whose every Metadata
    request fails: polled until they name each of ``wanted`` (without any, until ``timeout_s``),
    instead of waiting out one long list_topics."""
    errors: list = []
    admin = AdminClient({**conf, "log_level": 0, "error_cb": errors.append})
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin.list_topics(timeout=0.5)
        except KafkaException:
            pass
        else:
            raise AssertionError(f"{conf.get('sasl.username', 'the client')} was served metadata")
        admin.poll(0.1)         # serves error_cb
        text = " ".join(str(e) for e in errors)
        if (wanted and all(w in text for w in wanted)) or time.monotonic() >= deadline:
            return text


def produce_all(bootstrap: str, topic: str, records, **conf) -> list:
    """Produce (partition, key, value, headers, timestamp) tuples; returns delivered messages' (p, offset)."""
    delivered, errors = [], []

    def on_delivery(err, msg):
        (errors if err else delivered).append(err or (msg.partition(), msg.offset(), msg.key()))

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **conf})
    for part, key, value, headers, ts in records:
        while True:
            try:
                p.produce(topic, value=value, key=key, partition=part, headers=headers,
                          timestamp=ts or 0, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(60) == 0, "producer could not deliver everything"
    assert not errors, errors[:3]
    return delivered


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float = 60) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tierlog-tests", "enable.auto.commit": False,
                  "enable.partition.eof": False})
    c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])     # -2 = OFFSET_BEGINNING
    out, deadline = [], time.monotonic() + timeout_s
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                out.append(m)
    finally:
        c.close()
    return out


class AckedStream(threading.Thread):
    """An idempotent acks=all producer streaming until ``finish()``; keeps (partition, offset, value) of
    every acknowledged record in ``acked`` and every delivery error in ``errors``.

    Records are keyed ``k<i % keys>`` (the partitioner spreads them) or, with ``partitions``, sent
    round-robin to partitions 0..partitions-1; ``pause_s`` paces the stream between produce() calls;
    ``conf``: more producer settings (security).
    """

    def __init__(self, bootstrap: str, topic: str, *, partitions: int | None = None, keys: int = 97,
                 message_timeout_ms: int = 60000, pause_s: float = 0.003, conf: dict | None = None):
        super().__init__(daemon=True)
        self.topic, self.partitions, self.keys, self.pause_s = topic, partitions, keys, pause_s
        self.acked, self.errors, self.sent = [], [], 0
        self.stopping = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "retries": 1_000_000, "message.timeout.ms": message_timeout_ms,
                                  "retry.backoff.ms": 100, **(conf or {})})

    def _delivered(self, err, msg):
        if err:
            self.errors.append(err)
        else:
            self.acked.append((msg.partition(), msg.offset(), msg.value()))

    def run(self):
        while not self.stopping.is_set():
            i = self.sent
            where = {"partition": i % self.partitions} if self.partitions else {"key": f"k{i % self.keys}".encode()}
            try:
                self.producer.produce(self.topic, value=f"v{i}".encode(), on_delivery=self._delivered, **where)
                self.sent = i + 1
            except BufferError:
                pass
            self.producer.poll(self.pause_s)

    def finish(self, timeout_s: float = 120) -> int:
        """Stop producing and flush; returns the records still undelivered."""
        self.stopping.set()
        self.join(10)
        return self.producer.flush(timeout_s)

    def acked_on(self, partition: int) -> list[tuple[int, bytes]]:
        return sorted((off, v) for p, off, v in self.acked if p == partition)


def read_back(bootstrap: str, topic: str, partitions: int, timeout_s: float = 60,
              conf: dict | None = None) -> dict[int, dict[int, bytes]]:
    """Every record up to each partition's high watermark (taken first): partition -> {offset: value}."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "read-back", "enable.auto.commit": False,
                  **(conf or {})})
    try:
        highs = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in range(partitions)}
        c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
        out = {p: {} for p in range(partitions)}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(
                (max(out[p]) + 1 if out[p] else 0) < highs[p] for p in range(partitions)):
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                out[m.partition()][m.offset()] = m.value()
        return out
    finally:
        c.close()


def poll_records(consumer: Consumer, count: int, timeout_s: float = 60) -> list:
    """Up to ``count`` records from a subscribed consumer, polling until then or ``timeout_s``."""
    got, deadline = [], time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m)
    return got


def first_offsets(consumer: Consumer, partitions: int, timeout_s: float = 60) -> dict[int, int]:
    """Partition -> offset of the first record a subscribed consumer gets from it, for up to ``partitions``."""
    firsts, deadline = {}, time.monotonic() + timeout_s
    while len(firsts) < partitions and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None and m.partition() not in firsts:
            firsts[m.partition()] = m.offset()
    return firsts


def read_isolated(boot: str, topic: str, partitions: int, isolation: str, until: int | None = None,
                  timeout_s: float = 20) -> list[bytes]:
    """Every value of ``topic`` a consumer at ``isolation`` gets: until ``until`` values arrive, or
    until it stands at the end of every partition (its last stable offset / high watermark)."""
    c = Consumer({"bootstrap.servers": boot, "group.id": f"r-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values, at_end = [], set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                at_end.add(m.partition())
            else:
                values.append(m.value())
                at_end.discard(m.partition())
            if (until is not None and len(values) >= until) or (until is None and len(at_end) == partitions):
                return sorted(values)
        raise AssertionError(f"{isolation} read of {topic}: {sorted(values)} by the deadline")
    finally:
        c.close()
