"""DescribeLogDirs (35) over sockets on 1 controller + 3 brokers, through kafka-python.

After records are produced to an RF 3 topic, every broker's answer lists its
log dir (absolute path, TotalBytes >= UsableBytes > 0) with each partition of
the topic, its size (the bytes on disk of its segments, the same on every
replica once they caught up) and an offset lag of 0.  Asking for one
partition lists only that one; an unknown topic lists nothing.
(confluent-kafka 2.16 has no describe_log_dirs.)
"""
import pytest
from clients import produce_all
from cluster import wait_for
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

pytestmark = pytest.mark.integration

TOPIC, PARTITIONS = "dirs", 2


def _partitions(answer: list[dict], topic: str) -> dict[int, dict[int, dict]]:
    """broker -> partition -> its entry, for ``topic``."""
    out = {}
    for b in answer:
        (log_dir,) = b["log_dirs"]
        assert log_dir["error_code"] == 0, log_dir
        out[b["broker"]] = {p["partition_index"]: p for t in log_dir["topics"] if t["name"] == topic
                            for p in t["partitions"]}
    return out


def test_kafka_python_sees_every_replica_with_its_size(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
    produce_all(cluster.bootstrap, TOPIC, [(p, None, b"x" * 100, None, None) for p in range(PARTITIONS)
                                           for _ in range(50)])
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        def caught_up():
            seen = _partitions(kp.describe_log_dirs(), TOPIC)
            sizes = {p: {b[p]["partition_size"] for b in seen.values() if p in b} for p in range(PARTITIONS)}
            done = len(seen) == 3 and all(len(b) == PARTITIONS for b in seen.values()) \
                and all(len(s) == 1 and min(s) > 50 * 100 for s in sizes.values())
            return seen if done else None
        seen = wait_for(caught_up, 30, "every replica of both partitions at the same size")
        assert sorted(seen) == [b.node_id for b in cluster.brokers]
        assert all(p["offset_lag"] == 0 and p["is_future_key"] is False for b in seen.values() for p in b.values())

        answer = kp.describe_log_dirs()
        for b in answer:
            (log_dir,) = b["log_dirs"]
            broker = cluster.broker(b["broker"])
            assert log_dir["log_dir"] == str(broker.data_dir.absolute())
            assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0

        one = _partitions(kp.describe_log_dirs({TOPIC: [1]}), TOPIC)
        assert all(sorted(b) == [1] for b in one.values()) and len(one) == 3
        none = kp.describe_log_dirs({"no-such-topic": [0]})
        assert all(d["topics"] == [] for b in none for d in b["log_dirs"])
    finally:
        kp.close()
