"""Reserved topic names through confluent-kafka: the metadata log and the internal topics stay the node's.

Before the fix a CreateTopics of ``__cluster_metadata`` was accepted; its partition directory was the
Raft log's own, the broker appended user batches into the metadata log, and after a restart the
combined node came up as a fresh quorum without any topic.
"""
import pytest
from clients import consume_all, create_topic, produce_all
from cluster import request, wait_for
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.protocol.api import ApiKey

METADATA_TOPIC, OFFSETS_TOPIC = "__cluster_metadata", "__consumer_offsets"


def _error_of(future) -> KafkaError:
    with pytest.raises(KafkaException) as e:
        future.result(20)
    return e.value.args[0]


def _delivery_error(bootstrap: str, topic: str) -> KafkaError:
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000, "retries": 0})
    p.produce(topic, b"hostile", on_delivery=lambda err, msg: errors.append(err))
    p.flush(30)
    assert len(errors) == 1
    return errors[0]


def test_cluster_metadata_cannot_be_created_or_produced_to(node):
    create_topic(node.bootstrap, "kept")
    produce_all(node.bootstrap, "kept", [(0, b"k", b"v", None, None)])
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    error = _error_of(admin.create_topics([NewTopic(METADATA_TOPIC, 1, 1)])[METADATA_TOPIC])
    assert error.code() == KafkaError.INVALID_REQUEST and "prohibited" in error.str()
    assert _delivery_error(node.bootstrap, METADATA_TOPIC) is not None
    assert METADATA_TOPIC not in admin.list_topics(timeout=10).topics
    node.restart()          # the combined node's quorum and topics come back from its metadata log
    assert [m.value() for m in consume_all(node.bootstrap, "kept", 1, 1)] == [b"v"]
    assert "Traceback" not in node.log_path.read_text()


def test_internal_topics_cannot_be_deleted_or_produced_to(node):
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    wait_for(lambda: _offsets_topic_exists(node, admin), what=f"{OFFSETS_TOPIC} created")
    partitions = len(admin.list_topics(timeout=10).topics[OFFSETS_TOPIC].partitions)
    error = _error_of(admin.delete_topics([OFFSETS_TOPIC], operation_timeout=10)[OFFSETS_TOPIC])
    assert error.code() == KafkaError.INVALID_REQUEST
    assert _delivery_error(node.bootstrap, OFFSETS_TOPIC).code() == KafkaError.TOPIC_EXCEPTION
    assert len(admin.list_topics(timeout=10).topics[OFFSETS_TOPIC].partitions) == partitions


def _offsets_topic_exists(node, admin: AdminClient) -> bool:
    """FindCoordinator creates __consumer_offsets: ask for a group's coordinator until it exists."""
    request("127.0.0.1", node.port, ApiKey.FIND_COORDINATOR, {"Key": "reserved-names", "KeyType": 0}, 2)
    topic = admin.list_topics(timeout=10).topics.get(OFFSETS_TOPIC)
    return topic is not None and topic.error is None and len(topic.partitions) > 0
