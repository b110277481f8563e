"""CreatePartitions (37) over sockets on 1 controller + 3 brokers.

confluent-kafka's ``create_partitions`` (placed by the controller) and
kafka-python's (with a manual assignment) grow a topic; every broker's
Metadata then lists the new partitions with leaders, the brokers that host
them have their logs, and confluent-kafka produces to and consumes from a new
partition.  Bad input: shrinking, an unchanged count, an unknown topic and a
bad assignment get Kafka's error codes; validate_only changes nothing.
"""
import pytest
from clients import consume_all, produce_all
from cluster import wait_for
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    UnknownTopicOrPartitionError,
)

pytestmark = pytest.mark.integration

TOPIC = "grow"


def _everywhere(cluster, topic: str, count: int) -> list[dict]:
    def seen():
        views = [cluster.partitions(b, topic) for b in cluster.brokers]
        return views[0] if all(len(v) == count and all(p["LeaderId"] >= 0 for p in v) for v in views) else None
    return wait_for(seen, 30, f"every broker to list {count} partitions of {topic}")


def test_both_clients_grow_a_topic_and_the_new_partitions_work(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 2)])[TOPIC].result(30)
    _everywhere(cluster, TOPIC, 1)

    admin.create_partitions([NewPartitions(TOPIC, 3)], validate_only=True)[TOPIC].result(30)
    assert len(cluster.partitions(cluster.brokers[0], TOPIC)) == 1
    admin.create_partitions([NewPartitions(TOPIC, 3)], operation_timeout=30)[TOPIC].result(30)
    parts = _everywhere(cluster, TOPIC, 3)
    assert all(len(p["ReplicaNodes"]) == 2 for p in parts)

    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        kp.create_partitions({TOPIC: {"count": 4, "assignments": [[4, 2]]}})
        with pytest.raises(InvalidPartitionsError):
            kp.create_partitions({TOPIC: 2})
        with pytest.raises(InvalidReplicationAssignmentError):
            kp.create_partitions({TOPIC: {"count": 5, "assignments": [[2, 2]]}})
        with pytest.raises(UnknownTopicOrPartitionError):
            kp.create_partitions({"no-such-topic": 2})
    finally:
        kp.close()
    parts = _everywhere(cluster, TOPIC, 4)
    assert (parts[3]["ReplicaNodes"], parts[3]["LeaderId"]) == ([4, 2], 4)
    # the hosting brokers created the new partition's log
    for node_id in (4, 2):
        log_dir = cluster.broker(node_id).data_dir
        wait_for(lambda d=log_dir: any(d.rglob(f"{TOPIC}-3")), 30, f"broker {node_id}'s log of {TOPIC}-3")

    produce_all(cluster.bootstrap, TOPIC, [(p, None, b"p%d-%d" % (p, i), None, None) for p in (2, 3)
                                           for i in range(10)])
    values = sorted(m.value() for m in consume_all(cluster.bootstrap, TOPIC, 4, 20) if m.partition() in (2, 3))
    assert values == sorted(b"p%d-%d" % (p, i) for p in (2, 3) for i in range(10))

    for new, error in ((NewPartitions(TOPIC, 4), "INVALID_PARTITIONS"),
                       (NewPartitions("no-such-topic", 2), "UNKNOWN_TOPIC_OR_PART")):
        with pytest.raises(KafkaException) as e:
            admin.create_partitions([new])[new.topic].result(30)
        assert e.value.args[0].name() == error, e.value
    assert len(cluster.partitions(cluster.brokers[0], TOPIC)) == 4
