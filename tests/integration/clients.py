"""Small helpers around confluent-kafka for integration tests."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, name: str, partitions: int = 1, configs: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})], request_timeout=15)
    futures[name].result(timeout=20)


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
