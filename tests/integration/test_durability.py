"""kill -9 during a produce stream: every acknowledged record survives, and the log's CRCs are clean."""
import threading
import time
from pathlib import Path

from clients import create_topic
from confluent_kafka import Consumer, Producer, TopicPartition


def produce_until_stopped(bootstrap, topic, acked, stop):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                  "message.timeout.ms": 5000, "compression.type": "lz4"})

    def on_delivery(err, msg):
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value()))

    i = 0
    while not stop.is_set():
        try:
            p.produce(topic, value=f"rec-{i}".encode() * 8, partition=i % 2, on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.01)
        if i % 100 == 0:
            p.poll(0)
    p.flush(6)


def crc_scan(data_dir: Path) -> int:
    from tierlog.records import validate
    batches = 0
    for log_file in sorted(data_dir.glob("*/*.log")):
        buf = log_file.read_bytes()
        if buf:
            batches += len(validate(buf).headers)
    return batches


def _read_through(bootstrap, topic, acked) -> dict:
    """(partition, offset) -> value of every record up to each partition's last acknowledged offset.
    Not "as many records as were acknowledged": the log also holds records appended but not yet
    acknowledged when the node was killed, so that many can be read before one partition's tail."""
    last = {}
    for p, offset, _ in acked:
        last[p] = max(offset, last.get(p, -1))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tierlog-tests", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, -2) for p in sorted(last)])     # -2 = OFFSET_BEGINNING
    stored, reached, deadline = {}, {p: -1 for p in last}, time.monotonic() + 60
    try:
        while any(reached[p] < last[p] for p in last) and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                stored[(m.partition(), m.offset())] = m.value()
                reached[m.partition()] = max(reached[m.partition()], m.offset())
    finally:
        c.close()
    return stored


def test_kill9_loses_no_acknowledged_record(node):
    topic = "kill9"
    create_topic(node.bootstrap, topic, 2)
    acked, stop = [], threading.Event()
    t = threading.Thread(target=produce_until_stopped, args=(node.bootstrap, topic, acked, stop))
    t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 20_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    node.kill9()
    stop.set()
    t.join()
    assert len(acked) >= 20_000
    node.start()
    stored = _read_through(node.bootstrap, topic, acked)
    missing = [a for a in acked if stored.get((a[0], a[1])) != a[2]]
    assert not missing, f"{len(missing)} acknowledged records lost, first {missing[:3]}"
    node.stop()
    assert crc_scan(node.data_dir) > 0
