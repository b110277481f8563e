"""Remote data loss is visible (issue 21): 1 controller + 1 broker, a tiered topic.

Once most of the partition lives in remote storage only, the first remote
segment's ``.log`` object is deleted and a byte of the second one is flipped,
behind the broker's back.  Then:

1. ``tierlog remote verify`` (no broker) lists both segments, missing and
   corrupt, with their offsets and object keys, and exits 1.
2. A confluent-kafka consumer from offset 0 gets UNKNOWN_SERVER_ERROR as a
   consumer error (librdkafka retries KAFKA_STORAGE_ERROR silently), and so does
   one positioned in the corrupt segment; a kafka-python consumer gets it raised
   from ``poll()``.  The broker logs each lost segment once at ERROR, however
   often it is fetched.
3. ``tierlog delete-records`` moves the log start past both: a consumer from the
   beginning reads from there without error, and once remote retention has
   deleted the segments below the log start, ``tierlog remote verify`` exits 0.
"""
import subprocess
import sys
import time

import kafka.errors
from cluster import Cluster, running, wait_for
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from tiered import TIERED_TOPIC, fs_props, remote_listing, wait_tiered

from tierlog.tiered import segment_key
from tierlog.tiered.layout import LOG_SUFFIX

TOPIC, RECORDS = "lossy", 20_000


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def _produce(bootstrap: str) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "batch.size": 64 * 1024})
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(TOPIC, value=b"%08d:" % i + b"x" * 180, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    return RECORDS


def _first_error(consumer: Consumer, timeout_s: float = 30):
    """The first consumer error (records are skipped); None if none came within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is not None:
            return m
    return None


def _confluent(bootstrap: str, offset: int) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "loss", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(TOPIC, 0, offset)])
    return c


def _kafka_python_error(bootstrap: str, timeout_s: float = 30):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    tp = KafkaTopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            try:
                consumer.poll(timeout_ms=500)
            except kafka.errors.KafkaError as e:
                return e
        return None
    finally:
        consumer.close()


def test_a_lost_remote_segment_is_reported_surfaced_and_skippable(tmp_path):
    remote = tmp_path / "remote-storage"
    props = fs_props(remote)
    with running(Cluster(tmp_path, controllers=1, brokers=1, props=props)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=TIERED_TOPIC)], request_timeout=15)[TOPIC].result(20)
        end = _produce(cluster.bootstrap)
        wait_tiered(cluster, TOPIC, 1, {0: end})
        segments = remote_listing(props, TOPIC)[0].segments
        assert len(segments) >= 2, segments
        lost, corrupt = segments[0].metadata, segments[1].metadata
        lost_key = segment_key(lost.segment_id, lost.start_offset, LOG_SUFFIX)
        corrupt_key = segment_key(corrupt.segment_id, corrupt.start_offset, LOG_SUFFIX)
        (remote / lost_key).unlink()
        with open(remote / corrupt_key, "r+b") as f:
            f.seek(200)
            byte = f.read(1)
            f.seek(200)
            f.write(bytes([byte[0] ^ 0xFF]))

        verify = _cli("remote", "verify", "--storage", str(remote), "--topic", TOPIC)
        assert verify.returncode == 1, verify
        rows = [line.split("\t") for line in verify.stdout.splitlines()[1:]]
        assert [(r[1], r[2], r[3], r[4]) for r in rows] == [
            (str(lost.start_offset), str(lost.end_offset), "missing", lost_key),
            (str(corrupt.start_offset), str(corrupt.end_offset), "corrupt", corrupt_key)], verify.stdout
        assert verify.stderr.strip().startswith("tierlog: error: 2 problem(s)"), verify.stderr

        consumer = _confluent(cluster.bootstrap, 0)
        try:
            first = _first_error(consumer)
            assert first is not None, "no error surfaced to the application"
            assert first.error().code() == KafkaError.UNKNOWN, first.error()
            assert _first_error(consumer) is not None       # fetched again after the backoff: the same answer
        finally:
            consumer.close()
        consumer = _confluent(cluster.bootstrap, corrupt.start_offset)
        try:
            m = _first_error(consumer)
            assert m is not None and m.error().code() == KafkaError.UNKNOWN, m and m.error()
        finally:
            consumer.close()
        error = _kafka_python_error(cluster.bootstrap)
        assert isinstance(error, kafka.errors.UnknownError), error

        broker_log = cluster.brokers[0].log_path.read_text()
        for meta, kind in ((lost, "missing"), (corrupt, "corrupt")):
            lines = [line for line in broker_log.splitlines()
                     if f"remote segment [{meta.start_offset}, {meta.end_offset}] is {kind}" in line]
            assert len(lines) == 1 and " ERROR " in lines[0], lines

        skip_to = corrupt.end_offset + 1
        deleted = _cli("delete-records", "--bootstrap-server", cluster.bootstrap, "--topic", TOPIC,
                       "--partition", "0", "--offset", str(skip_to))
        assert deleted.returncode == 0 and deleted.stdout.strip() == f"{TOPIC}-0: low watermark {skip_to}", deleted
        consumer = _confluent(cluster.bootstrap, -2)        # OFFSET_BEGINNING
        try:
            deadline, got = time.monotonic() + 30, None
            while got is None and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is not None:
                    assert m.error() is None, m.error()
                    got = m
            assert got is not None and got.offset() == skip_to, got
        finally:
            consumer.close()
        wait_for(lambda: _cli("remote", "verify", "--storage", str(remote), "--topic", TOPIC).returncode == 0,
                 30, "remote retention deleting the lost segments below the new log start")
