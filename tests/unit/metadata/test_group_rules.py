"""KIP-848 group configs: Kafka's GroupConfig validation and the values a coordinator runs with."""
import pytest

from tierlog.metadata.group_rules import (
    GROUP_CONFIG_BROKER_KEYS,
    broker_group_settings,
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
    ({"share.session.timeout.ms": "4000"}, "Unknown group config name"),
])
def test_invalid_sets_are_invalid_config(configs, message):
    with pytest.raises(RuleError) as raised:
        validate_group_configs(configs, BROKER)
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG and message in str(raised.value)


def test_effective_values_fall_back_and_clamp():
    assert effective_group_configs({}, BROKER) == {"consumer.session.timeout.ms": 45000,
                                                   "consumer.heartbeat.interval.ms": 5000}
    got = effective_group_configs({"consumer.session.timeout.ms": "100", "consumer.heartbeat.interval.ms": "junk"},
                                  BROKER)
    assert got == {"consumer.session.timeout.ms": 3000, "consumer.heartbeat.interval.ms": 5000}
