"""Real clients against a real node process: every record comes back, in order and intact."""
import time

import pytest
from clients import consume_all, create_topic, produce_all
from confluent_kafka import Consumer, TopicPartition

N = 50_000
PARTITIONS = 3


def make_records(n, base_ts):
    return [(i % PARTITIONS, f"key-{i}".encode(), f"value-{i}-".encode() * 4,
             [("seq", str(i).encode()), ("empty", b"")], base_ts + i) for i in range(n)]


def check_per_partition_order(messages, n, base_ts):
    assert len(messages) == n
    by_part = {}
    for m in messages:
        by_part.setdefault(m.partition(), []).append(m)
    for p, msgs in by_part.items():
        offsets = [m.offset() for m in msgs]
        assert offsets == list(range(len(msgs))), f"partition {p} has gaps or reordering"
        seqs = [int(dict(m.headers())["seq"]) for m in msgs]
        assert seqs == sorted(seqs) and all(s % PARTITIONS == p for s in seqs)
        for m, s in zip(msgs, seqs):
            assert m.key() == f"key-{s}".encode()
            assert m.value() == f"value-{s}-".encode() * 4
            assert m.timestamp()[1] == base_ts + s
            assert dict(m.headers())["empty"] in (b"", None)


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_confluent_kafka_round_trip(shared_node, compression):
    topic = f"rt-ck-{compression}"
    create_topic(shared_node.bootstrap, topic, PARTITIONS)
    base_ts = int(time.time() * 1000) - 100_000
    produce_all(shared_node.bootstrap, topic, make_records(N, base_ts), **{"compression.type": compression})
    check_per_partition_order(consume_all(shared_node.bootstrap, topic, PARTITIONS, N), N, base_ts)


def test_kafka_python_round_trip(shared_node):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    topic = "rt-kafka-python"
    create_topic(shared_node.bootstrap, topic, PARTITIONS)
    n = 20_000
    base_ts = int(time.time() * 1000) - 100_000
    producer = KafkaProducer(bootstrap_servers=shared_node.bootstrap, acks="all", linger_ms=5,
                             compression_type="gzip")
    futures = [producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS,
                             headers=[("seq", str(i).encode())], timestamp_ms=base_ts + i) for i in range(n)]
    producer.flush(60)
    for f in futures[::997]:
        assert f.get(timeout=10).offset >= 0
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=shared_node.bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=10_000)
    consumer.assign([KTP(topic, p) for p in range(PARTITIONS)])
    seen = {}
    for m in consumer:
        seen.setdefault(m.partition, []).append(m)
        if sum(map(len, seen.values())) == n:
            break
    consumer.close()
    assert sum(map(len, seen.values())) == n
    for msgs in seen.values():
        assert [m.offset for m in msgs] == list(range(len(msgs)))
        for m in msgs:
            i = int(dict(m.headers)["seq"])
            assert (m.key, m.value, m.timestamp) == (f"k{i}".encode(), f"v{i}".encode(), base_ts + i)


def test_read_committed_consumer_reads_to_the_last_stable_offset(shared_node):
    """``Partition.max_offset``: with no transaction open the last stable offset is the high
    watermark, so a read_committed consumer gets the same watermarks and every acknowledged record."""
    topic = "rt-read-committed"
    create_topic(shared_node.bootstrap, topic, 1)
    n = 500
    produce_all(shared_node.bootstrap, topic, [(0, None, f"r{i}".encode(), None, None) for i in range(n)])
    c = Consumer({"bootstrap.servers": shared_node.bootstrap, "group.id": "rt-read-committed",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, n)
        c.assign([TopicPartition(topic, 0, -2)])
        values, deadline = [], time.monotonic() + 30
        while len(values) < n and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                values.append(m.value())
    finally:
        c.close()
    assert values == [f"r{i}".encode() for i in range(n)]


def test_offsets_for_times(shared_node):
    topic = "rt-timestamps"
    create_topic(shared_node.bootstrap, topic, 1)
    base_ts = 1_700_000_000_000
    recs = [(0, None, f"r{i}".encode(), None, base_ts + 10 * i) for i in range(2000)]
    produce_all(shared_node.bootstrap, topic, recs, **{"linger.ms": 1, "batch.num.messages": 100})
    c = Consumer({"bootstrap.servers": shared_node.bootstrap, "group.id": "ts"})
    try:
        for i in (0, 1, 555, 1999):
            [tp] = c.offsets_for_times([TopicPartition(topic, 0, base_ts + 10 * i)], timeout=10)
            assert tp.offset == i
        [tp] = c.offsets_for_times([TopicPartition(topic, 0, base_ts + 10 * 555 - 3)], timeout=10)
        assert tp.offset == 555
        [tp] = c.offsets_for_times([TopicPartition(topic, 0, base_ts + 10 * 5000)], timeout=10)
        assert tp.offset == -1            # after the last record: no offset (end of log)
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert (lo, hi) == (0, 2000)
    finally:
        c.close()


def test_restart_keeps_data(node):
    topic = "rt-restart"
    create_topic(node.bootstrap, topic, 2)
    recs = [(i % 2, None, f"x{i}".encode(), None, None) for i in range(5000)]
    produce_all(node.bootstrap, topic, recs)
    node.restart()
    got = consume_all(node.bootstrap, topic, 2, 5000)
    assert sorted(m.value() for m in got) == sorted(f"x{i}".encode() for i in range(5000))
    produce_all(node.bootstrap, topic, [(0, None, b"after", None, None)])
    assert len(consume_all(node.bootstrap, topic, 2, 5001)) == 5001


def test_idempotent_producer(shared_node):
    topic = "rt-idempotent"
    create_topic(shared_node.bootstrap, topic, 2)
    recs = [(i % 2, None, f"i{i}".encode(), None, None) for i in range(10_000)]
    produce_all(shared_node.bootstrap, topic, recs, **{"enable.idempotence": True})
    got = consume_all(shared_node.bootstrap, topic, 2, 10_000)
    assert sorted(m.value() for m in got) == sorted(r[2] for r in recs)
