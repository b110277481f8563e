"""A tiered topic for direct-read tests: about 2.6 MiB per partition in 1 MiB segments, mostly
uploaded and deleted locally, on an fs store or a moto S3 store (the ``tiered_node`` and
``s3_tiered_node`` fixtures of conftest.py fill it)."""
import random
import time

from clients import create_topic, produce_all
from cluster import wait_for
from tiered import EARLIEST_LOCAL, LATEST_TIERED, TIERED_TOPIC, offsets

TOPIC = "remote-read"
PARTITIONS = 2
RECORDS = 8000


def records():
    """About 2.6 MiB per partition in 1 MiB segments: null keys, headers, plain and zstd batches
    (timestamps of now: older ones would expire by retention.ms at once)."""
    now_ms = int(time.time() * 1000)
    out = []
    rng = random.Random(25)
    for i in range(RECORDS):
        key = None if i % 7 == 0 else b"key-%d" % i
        value = b"%08d" % i + rng.randbytes(300 + i % 700)      # incompressible: zstd batches stay big
        headers = [("h", b"%d" % i), ("none", None)] if i % 5 == 0 else None
        out.append((i % PARTITIONS, key, value, headers, now_ms + i))
    return out


def fill(node) -> None:
    create_topic(node.bootstrap, TOPIC, PARTITIONS, TIERED_TOPIC)
    rows = records()
    produce_all(node.bootstrap, TOPIC, rows[:RECORDS // 2])
    produce_all(node.bootstrap, TOPIC, rows[RECORDS // 2:], **{"compression.type": "zstd"})
    wait_for(lambda: all((offsets(node, TOPIC, p, LATEST_TIERED) or -1) >= 1000
                         and (offsets(node, TOPIC, p, EARLIEST_LOCAL) or 0) > 0 for p in range(PARTITIONS)),
             120, f"{TOPIC} mostly uploaded and deleted locally", interval_s=0.5)
