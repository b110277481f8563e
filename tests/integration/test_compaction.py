"""Log compaction in real processes (1 controller + 3 brokers, RF 3): a compacted topic
with small segments gets many updates to a few keys and some tombstones from
confluent-kafka; the brokers' cleaners compact it until confluent-kafka and
kafka-python, reading from the beginning, see exactly the latest value of each live
key (tombstones gone after delete.retention.ms), at increasing offsets with gaps; after
a kill -9 of the leader a follower (compacted on its own) serves the same. A record
without a key is refused with INVALID_RECORD. With transactions: a clean while a
transaction is open stops at the last stable offset, aborted data goes and then, after
delete.retention.ms, its ABORT marker, on every replica. The test that kills a broker has a cluster
of its own; the other two share one (``shared_cluster``).
"""

import time

import pytest
from cluster import FAST_REPLICATION, wait_for
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.records.control import ABORT, read_marker
from tierlog.records.decoder import iter_batches

pytestmark = pytest.mark.cluster(controllers=1, brokers=3,
                                 props={**FAST_REPLICATION, "log.cleaner.backoff.ms": "100",
                                        "transaction.state.log.num.partitions": "4"})

TOPIC = "compacted"
KEYS = [f"key-{i}".encode() for i in range(8)]
DELETED = KEYS[6:]
SEGMENT_BYTES = 1048576         # segment.bytes' least value
VALUE_BYTES = 10_000
FILLER = b"filler"
CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES),
           "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "2000", "segment.ms": "604800000"}


def _create(cluster, topic: str = TOPIC) -> None:
    cluster.wait_leader()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3, config=CONFIGS)], request_timeout=15)[topic].result(timeout=20)

    def everywhere():
        return all(len(ps) == 1 and ps[0]["LeaderId"] >= 0 and len(ps[0]["IsrNodes"]) == 3
                   for ps in (cluster.partitions(b, topic) for b in cluster.brokers))
    wait_for(everywhere, 20, f"{topic} with a leader and a full ISR on every broker")


def _producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2, "enable.idempotence": True,
                     "message.timeout.ms": 60000, "message.max.bytes": 2 * SEGMENT_BYTES})


def _send(producer: Producer, records, topic: str = TOPIC) -> None:
    errors = []
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=0, on_delivery=lambda e, _m: e and errors.append(e))
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors[:3]


def _roll(producer: Producer, topic: str = TOPIC) -> None:
    """A record about one segment large: it rolls the active segment, so what came before it
    becomes cleanable, and it alone stays in the active segment."""
    _send(producer, [(FILLER, b"f" * (SEGMENT_BYTES - VALUE_BYTES))], topic)


def _read_confluent(bootstrap: str, topic: str = TOPIC,
                    isolation: str = "read_uncommitted") -> list[tuple[int, bytes, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-test", "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": isolation})
    out = []
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, -2)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if out and out[-1][0] >= high - 1:
                        break
                    continue
                raise AssertionError(msg.error())
            out.append((msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def _read_kafka_python(bootstrap: str) -> list[tuple[int, bytes, bytes | None]]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    tp = KTP(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=1000)
    out = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend((r.offset, r.key, r.value) for r in records)
    finally:
        consumer.close()
    return out


def _problems(records, expected: dict[bytes, bytes]) -> list[str]:
    """What keeps ``records`` (a full read) from being exactly the compacted log."""
    offsets = [offset for offset, _k, _v in records]
    problems = []
    if offsets != sorted(set(offsets)):
        problems.append("offsets not increasing")
    data = [(k, v) for _o, k, v in records if k != FILLER]
    if sorted(k for k, _v in data) != sorted(expected):
        problems.append(f"keys {sorted(k for k, _v in data)}")
    if dict(data) != expected:
        problems.append("values differ from the latest ones")
    if not 1 <= sum(1 for _o, k, _v in records if k == FILLER) <= 2:    # the active segment's and the latest
        problems.append("fillers not compacted")                         # one below it
    return problems


def _wait_compacted(cluster, producer: Producer, expected: dict[bytes, bytes], timeout_s: float = 90) -> list:
    """Roll segments until a full read is exactly ``expected`` (later cleans are what remove
    tombstones whose delete horizon has passed); returns that read."""
    seen = {}

    def compacted():
        _roll(producer)
        records = _read_confluent(cluster.bootstrap)
        seen["last read"] = (len(records), _problems(records, expected))
        return records if not _problems(records, expected) else None
    try:
        return wait_for(compacted, timeout_s, "a fully compacted log", interval_s=0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {seen}\n{cluster.logs_tail()}") from None


def test_compaction_keeps_the_latest_value_per_key_on_every_replica(cluster):
    _create(cluster)
    producer = _producer(cluster.bootstrap)
    expected = {}
    for round_ in range(40):
        batch = [(key, b"%s=%d;" % (key, round_) + b"p" * VALUE_BYTES) for key in KEYS]
        _send(producer, batch)
        expected.update(batch)
    _send(producer, [(key, None) for key in DELETED])
    for key in DELETED:
        del expected[key]
    for round_ in range(40, 50):
        batch = [(key, b"%s=%d;" % (key, round_) + b"q" * VALUE_BYTES) for key in KEYS[:6]]
        _send(producer, batch)
        expected.update(batch)
    produced = 40 * 8 + 2 + 10 * 6

    records = _wait_compacted(cluster, producer, expected)
    assert len(records) < produced / 10
    python_records = _read_kafka_python(cluster.bootstrap)
    assert not _problems(python_records, expected), _problems(python_records, expected)
    assert [o for o, _k, _v in python_records] == [o for o, _k, _v in records]

    def cleaned_on_every_replica():     # each replica's own cleaner recorded its first dirty offset
        files = [b.data_dir / "cleaner-offset-checkpoint" for b in cluster.brokers]
        return all(f.exists() and f"{TOPIC} 0 " in f.read_text() for f in files)
    wait_for(cleaned_on_every_replica, 30, "a clean on every replica")
    leader_id = cluster.partitions(cluster.brokers[0], TOPIC)[0]["LeaderId"]
    cluster.broker(leader_id).kill9()

    def new_leader():
        ps = cluster.live_partitions(TOPIC, 1)
        return ps and ps[0]["LeaderId"] not in (-1, leader_id)
    wait_for(new_leader, 30, "a new leader after the kill -9")
    _wait_compacted(cluster, producer, expected)       # served by the new leader, compacted on its own
    producer.flush(10)


def _abort_markers(cluster, topic: str) -> int:
    """ABORT markers in the partition's rolled and active segments on every broker (whole batches)."""
    found = 0
    for broker in cluster.brokers:
        for path in (broker.data_dir / f"{topic}-0").glob("*.log"):
            data = path.read_bytes()
            found += sum(1 for pos, h in iter_batches(data, partial_ok=True)
                         if h.is_control and read_marker(data[pos:pos + h.size], h)[0] == ABORT)
    return found


def _read_isolated(bootstrap: str, topic: str, isolation: str) -> dict[bytes, bytes]:
    return {k: v for _o, k, v in _read_confluent(bootstrap, topic, isolation) if k != FILLER}


def test_aborted_data_then_its_markers_are_cleaned_and_an_open_transaction_is_not(shared_cluster):
    cluster, topic = shared_cluster, "compacted-txn"
    _create(cluster, topic)
    plain = _producer(cluster.bootstrap)
    _send(plain, [(b"k0", b"committed-v1")], topic)
    _roll(plain, topic)         # joins k0 in the first segment
    _roll(plain, topic)         # starts the second segment, where the transaction goes
    txn = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "compacted-txn", "linger.ms": 2})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, key=b"k0", value=b"aborted", partition=0)
    txn.produce(topic, key=b"k1", value=b"aborted", partition=0)
    assert txn.flush(30) == 0
    _roll(plain, topic)
    # a clean while the transaction is open stops at its first offset (the last stable offset): its k0
    # must not displace the committed one, which would be lost once the transaction aborts
    checkpoints = [b.data_dir / "cleaner-offset-checkpoint" for b in cluster.brokers]
    wait_for(lambda: all(f.exists() and f"{topic} 0 " in f.read_text() for f in checkpoints), 30,
             "a clean on every replica while the transaction is open")
    txn.abort_transaction(30)
    txn.begin_transaction()
    txn.produce(topic, key=b"k2", value=b"committed-txn", partition=0)
    txn.commit_transaction(30)
    expected = {b"k0": b"committed-v1", b"k2": b"committed-txn"}

    def cleaned():      # later cleans remove the marker once delete.retention.ms passed: roll to cause them
        _roll(plain, topic)
        return _read_isolated(cluster.bootstrap, topic, "read_uncommitted") == expected \
            and _abort_markers(cluster, topic) == 0
    wait_for(cleaned, 90, "aborted data and its marker cleaned on every replica", interval_s=1.0)
    assert _read_isolated(cluster.bootstrap, topic, "read_committed") == expected


def test_a_record_without_a_key_is_refused_by_a_compacted_topic(shared_cluster):
    topic = "compacted-keys"
    _create(shared_cluster, topic)
    producer = Producer({"bootstrap.servers": shared_cluster.bootstrap, "acks": "all", "message.timeout.ms": 20000,
                         "retries": 0})
    errors = []
    producer.produce(topic, value=b"no key", partition=0, on_delivery=lambda e, _m: errors.append(e))
    assert producer.flush(30) == 0
    producer.produce(topic, key=b"k", value=b"with key", partition=0, on_delivery=lambda e, _m: errors.append(e))
    assert producer.flush(30) == 0
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD, errors
    assert errors[1] is None, errors
