"""kill -9 during a produce stream: every acknowledged record survives, and the log's CRCs are clean."""
import threading
import time
from pathlib import Path

from clients import consume_all, create_topic
from confluent_kafka import Producer


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
    got = consume_all(node.bootstrap, topic, 2, len(acked))
    stored = {(m.partition(), m.offset()): m.value() for m in got}
    missing = [a for a in acked if stored.get((a[0], a[1])) != a[2]]
    assert not missing, f"{len(missing)} acknowledged records lost, first {missing[:3]}"
    node.stop()
    assert crc_scan(node.data_dir) > 0
