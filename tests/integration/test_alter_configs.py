"""AlterConfigs (33), the legacy whole-set alter, over sockets on 1 controller + 3 brokers.

confluent-kafka's (deprecated) ``AdminClient.alter_configs`` and kafka-python's
``alter_configs(incremental=False)`` replace a topic's dynamic configs; every
broker's DescribeConfigs then shows the new set, and the keys left out are
back at their defaults.  Bad input: an unknown topic, an unknown key and a
bad value get Kafka's error codes, and validate_only changes nothing.
"""
import pytest
from cluster import request, wait_for
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

pytestmark = pytest.mark.integration

DESCRIBE_CONFIGS, TOPIC, DYNAMIC_TOPIC_CONFIG, UNKNOWN_TOPIC_OR_PARTITION = 32, 2, 1, 3


def _overrides(broker, topic: str) -> dict | None:
    """The topic's dynamic configs as ``broker`` describes them; None while it does not know the topic."""
    body = {"Resources": [{"ResourceType": TOPIC, "ResourceName": topic, "ConfigurationKeys": None}]}
    result = request("127.0.0.1", broker.port, DESCRIBE_CONFIGS, body, version=4)["Results"][0]
    if result["ErrorCode"] == UNKNOWN_TOPIC_OR_PARTITION:
        return None
    assert result["ErrorCode"] == 0, result
    return {c["Name"]: c["Value"] for c in result["Configs"] if c["ConfigSource"] == DYNAMIC_TOPIC_CONFIG}


def _everywhere(cluster, topic: str, expected: dict) -> None:
    wait_for(lambda: all(_overrides(b, topic) == expected for b in cluster.brokers), 30,
             f"every broker to describe {topic} with {expected}")


def test_both_clients_replace_the_topic_config_set(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("legacy-cfg", 1, 3, config={"retention.ms": "3600000",
                                                              "segment.bytes": "1048576"})])["legacy-cfg"].result(30)
    _everywhere(cluster, "legacy-cfg", {"retention.ms": "3600000", "segment.bytes": "1048576"})

    res = ConfigResource("topic", "legacy-cfg", set_config={"cleanup.policy": "compact",
                                                            "max.message.bytes": "2000000"})
    admin.alter_configs([res])[res].result(30)
    # the keys not given (retention.ms, segment.bytes) are gone
    _everywhere(cluster, "legacy-cfg", {"cleanup.policy": "compact", "max.message.bytes": "2000000"})

    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        # kafka-python adds the topic's other modified keys itself; a null value asks the broker to drop one
        result = kp.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, "legacy-cfg",
                                                    configs={"retention.ms": "7200000", "cleanup.policy": None})],
                                  incremental=False, raise_on_unknown=False)
        assert result == {"topic": {"legacy-cfg": "OK"}}, result
    finally:
        kp.close()
    _everywhere(cluster, "legacy-cfg", {"retention.ms": "7200000", "max.message.bytes": "2000000"})


@pytest.mark.cluster(brokers=1)
def test_bad_input_gets_kafka_error_codes(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("legacy-bad", 1, 1, config={"retention.ms": "3600000"})])["legacy-bad"].result(30)
    cases = [("no-such-topic", {"retention.ms": "1"}, "UNKNOWN_TOPIC_OR_PART"),
             ("legacy-bad", {"no.such.config": "1"}, "INVALID_CONFIG"),
             ("legacy-bad", {"retention.ms": "soon"}, "INVALID_CONFIG")]
    for topic, configs, error in cases:
        res = ConfigResource("topic", topic, set_config=configs)
        with pytest.raises(KafkaException) as e:
            admin.alter_configs([res])[res].result(30)
        assert e.value.args[0].name().startswith(error), (topic, configs, e.value)
    res = ConfigResource("topic", "legacy-bad", set_config={"retention.ms": "5000"})
    admin.alter_configs([res], validate_only=True)[res].result(30)
    assert _overrides(cluster.brokers[0], "legacy-bad") == {"retention.ms": "3600000"}
