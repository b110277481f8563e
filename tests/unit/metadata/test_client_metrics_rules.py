"""KIP-714 client metrics subscriptions: the controller's checks, what a client is asked to push,
and the CLIENT_METRICS ConfigRecords in the image."""

import pytest

from tierlog.metadata.client_metrics_rules import (
    DEFAULT_INTERVAL_MS,
    client_subscription,
    validate_client_metrics_configs,
)
from tierlog.metadata.cluster_records import ConfigRecord
from tierlog.metadata.topic_rules import RuleError
from tierlog.protocol.errors import ErrorCode

from .helpers import apply, cluster


@pytest.mark.parametrize(("name", "configs", "code", "message"), [
    ("", {}, ErrorCode.INVALID_REQUEST, "must not be empty"),
    ("s", {"color": "red"}, ErrorCode.INVALID_CONFIG, "Unknown client metrics configuration: color"),
    ("s", {"interval.ms": "99"}, ErrorCode.INVALID_CONFIG, "interval.ms"),
    ("s", {"interval.ms": "3600001"}, ErrorCode.INVALID_CONFIG, "interval.ms"),
    ("s", {"interval.ms": "soon"}, ErrorCode.INVALID_CONFIG, "interval.ms"),
    ("s", {"match": "client_rack=a"}, ErrorCode.INVALID_CONFIG, "selector"),
    ("s", {"match": "client_id"}, ErrorCode.INVALID_CONFIG, "selector=regex"),
    ("s", {"match": "client_id=a("}, ErrorCode.INVALID_CONFIG, "regular expression"),
])
def test_refusals(name, configs, code, message):
    with pytest.raises(RuleError, match=message) as e:
        validate_client_metrics_configs(name, configs)
    assert e.value.error_code == code


def test_valid_configs_pass():
    validate_client_metrics_configs("s", {"metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.",
                                          "interval.ms": "100", "match": "client_id=a.*,client_software_name=x"})


SUBSCRIPTIONS = {
    "producers": {"metrics": "org.apache.kafka.producer.", "interval.ms": "5000", "match": "client_id=billing-.*"},
    "latency": {"metrics": "org.apache.kafka.producer.node.request.latency,org.apache.kafka.producer.",
                "interval.ms": "1000", "match": "client_id=billing-eu"},
    "everything": {"metrics": "*", "match": "client_source_address=10\\.0\\..*"},
}


def test_a_client_gets_the_union_of_what_matches_it_and_the_smallest_interval():
    eu = client_subscription(SUBSCRIPTIONS, {"client_instance_id": "i1", "client_id": "billing-eu"})
    assert eu.metrics == ("org.apache.kafka.producer.", "org.apache.kafka.producer.node.request.latency")
    assert eu.push_interval_ms == 1000 and eu.subscriptions == ("latency", "producers")
    us = client_subscription(SUBSCRIPTIONS, {"client_instance_id": "i2", "client_id": "billing-us"})
    assert us.metrics == ("org.apache.kafka.producer.",) and us.push_interval_ms == 5000
    inside = client_subscription(SUBSCRIPTIONS, {"client_instance_id": "i3", "client_source_address": "10.0.0.7"})
    assert inside.metrics == ("",) and inside.push_interval_ms == DEFAULT_INTERVAL_MS     # "*": every metric
    nobody = client_subscription(SUBSCRIPTIONS, {"client_instance_id": "i4", "client_id": "billing"})
    assert nobody.metrics == () and nobody.subscriptions == ()        # the regex matches the whole value


def test_the_subscription_id_changes_with_what_is_asked_and_per_instance():
    client = {"client_instance_id": "i1", "client_id": "billing-us"}
    first = client_subscription(SUBSCRIPTIONS, client)
    assert client_subscription(SUBSCRIPTIONS, client).subscription_id == first.subscription_id
    faster = {**SUBSCRIPTIONS, "producers": {**SUBSCRIPTIONS["producers"], "interval.ms": "2000"}}
    assert client_subscription(faster, client).subscription_id != first.subscription_id
    other = client_subscription(SUBSCRIPTIONS, {**client, "client_instance_id": "i2"})
    assert other.subscription_id != first.subscription_id
    assert -(1 << 31) <= first.subscription_id < 1 << 31


def test_config_records_of_type_16_are_the_images_subscriptions():
    img = apply(cluster(), [ConfigRecord(16, "producers", "metrics", "org.apache.kafka.producer."),
                            ConfigRecord(16, "producers", "interval.ms", "1000"),
                            ConfigRecord(16, "all", "metrics", "*")])
    assert dict(img.client_metrics["producers"]) == {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000"}
    img = apply(img, [ConfigRecord(16, "all", "metrics", None)])
    assert "all" not in img.client_metrics and "producers" in img.client_metrics
