"""Admin APIs through confluent-kafka's AdminClient against a real node."""
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)


def admin(node):
    return AdminClient({"bootstrap.servers": node.bootstrap})


def test_validate_only_creates_nothing(shared_node):
    a = admin(shared_node)
    a.create_topics([NewTopic("adm-dry", 2, 1)], validate_only=True)["adm-dry"].result(20)
    assert "adm-dry" not in a.list_topics(timeout=10).topics


@pytest.mark.parametrize("topic, kwargs, error", [
    ("adm-bad-config", {"config": {"retention.ms": "soon"}}, "INVALID_CONFIG"),
    ("adm-unknown-config", {"config": {"no.such.config": "1"}}, "INVALID_CONFIG"),
    ("bad/name", {}, "TOPIC_EXCEPTION"),          # code 17, INVALID_TOPIC_EXCEPTION in Kafka
    ("adm-rf", {"replication_factor": 3}, "INVALID_REPLICATION_FACTOR"),
])
def test_bad_create_gets_the_right_error(shared_node, topic, kwargs, error):
    rf = kwargs.pop("replication_factor", 1)
    a = admin(shared_node)               # keep the client alive until the future resolves
    fut = a.create_topics([NewTopic(topic, 1, rf, **kwargs)])[topic]
    with pytest.raises(KafkaException) as e:
        fut.result(20)
    assert e.value.args[0].name() == error


def test_alter_and_describe_topic_config(shared_node):
    a = admin(shared_node)
    a.create_topics([NewTopic("adm-cfg", 1, 1)])["adm-cfg"].result(20)
    res = ConfigResource("topic", "adm-cfg", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(20)
    configs = a.describe_configs([ConfigResource("topic", "adm-cfg")])
    entries = next(iter(configs.values())).result(20)
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == 1            # DYNAMIC_TOPIC_CONFIG
    assert entries["segment.bytes"].is_default
