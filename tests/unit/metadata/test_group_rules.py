"""KIP-848 group configs: Kafka's GroupConfig validation and the values a coordinator runs with."""
import pytest

from tierlog.metadata.group_rules import (
    GROUP_CONFIG_BROKER_KEYS,
    broker_group_settings,
    by_duration_ms,
    effective_group_configs,
    validate_group_configs,
)
from tierlog.metadata.topic_rules import RuleError
from tierlog.protocol.errors import ErrorCode

BROKER = broker_group_settings({"group.consumer.min.session.timeout.ms": "3000",
                                "group.consumer.min.heartbeat.interval.ms": 500})


def test_broker_settings_take_the_node_config_else_the_built_in_defaults():
    assert set(BROKER) == set(GROUP_CONFIG_BROKER_KEYS)
    assert BROKER["group.consumer.min.session.timeout.ms"] == 3000
    assert BROKER["group.consumer.session.timeout.ms"] == 45000
    assert BROKER["group.consumer.max.heartbeat.interval.ms"] == 15000


@pytest.mark.parametrize("configs", [
    {"consumer.session.timeout.ms": "3000", "consumer.heartbeat.interval.ms": "500"},
    {"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed",
     "share.record.lock.duration.ms": "15000", "share.delivery.count.limit": "3",
     "share.session.timeout.ms": "60000", "share.heartbeat.interval.ms": "15000",
     "errors.deadletterqueue.topic.name": "dlq.orders"},
    {"share.auto.offset.reset": "by_duration:P1DT2H30M1.5S"},
    {"consumer.heartbeat.interval.ms": "15000"},            # the session timeout stays the broker's 45 s
    {},
])
def test_valid_sets(configs):
    validate_group_configs(configs, BROKER)


@pytest.mark.parametrize("configs, message", [
    ({"consumer.session.timeout.ms": "2999"}, "greater than or equal to group.consumer.min.session.timeout.ms"),
    ({"consumer.session.timeout.ms": "60001"}, "less than or equal to group.consumer.max.session.timeout.ms"),
    ({"consumer.heartbeat.interval.ms": "499"}, "greater than or equal to group.consumer.min.heartbeat"),
    ({"consumer.heartbeat.interval.ms": "x"}, "Not a number of type INT"),
    ({"consumer.heartbeat.interval.ms": "0"}, "at least 1"),
    ({"consumer.session.timeout.ms": "4000", "consumer.heartbeat.interval.ms": "4000"}, "must be greater than"),
    ({"share.session.timeout.ms": "4000"}, "greater than or equal to group.share.min.session.timeout.ms"),
    ({"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "50000"}, "less than or equal to"),
    ({"share.record.lock.duration.ms": "999"}, "at least 1000"),
    ({"share.delivery.count.limit": "11"}, "less than or equal to group.share.max.delivery.count.limit"),
    ({"share.auto.offset.reset": "none"}, "by_duration"),
    ({"share.auto.offset.reset": "by_duration:-PT1H"}, "by_duration"),
    ({"share.isolation.level": "serializable"}, "read_committed"),
    ({"errors.deadletterqueue.topic.name": "bad name"}, "errors.deadletterqueue.topic.name"),
    ({"streams.session.timeout.ms": "4000"}, "Unknown group config name"),
])
def test_invalid_sets_are_invalid_config(configs, message):
    with pytest.raises(RuleError) as raised:
        validate_group_configs(configs, BROKER)
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG and message in str(raised.value)


def test_effective_values_fall_back_and_clamp():
    defaults = effective_group_configs({}, BROKER)
    assert (defaults["consumer.session.timeout.ms"], defaults["consumer.heartbeat.interval.ms"]) == (45000, 5000)
    assert defaults["share.session.timeout.ms"] == 45000 and defaults["share.record.lock.duration.ms"] == 30000
    assert defaults["share.delivery.count.limit"] == 5 and defaults["share.auto.offset.reset"] == "latest"
    assert defaults["share.isolation.level"] == "read_uncommitted" and defaults["errors.deadletterqueue.topic.name"] == ""
    got = effective_group_configs({"consumer.session.timeout.ms": "100", "consumer.heartbeat.interval.ms": "junk",
                                   "share.delivery.count.limit": "50", "share.auto.offset.reset": "earliest"}, BROKER)
    assert (got["consumer.session.timeout.ms"], got["consumer.heartbeat.interval.ms"]) == (3000, 5000)
    assert (got["share.delivery.count.limit"], got["share.auto.offset.reset"]) == (10, "earliest")


def test_by_duration_is_milliseconds():
    assert by_duration_ms("by_duration:PT1H") == 3_600_000
    assert by_duration_ms("by_duration:P1DT0.5S") == 86_400_500
    assert by_duration_ms("latest") is None
