"""Kafka's rules for remote.storage.enable at CreateTopics and IncrementalAlterConfigs (INVALID_CONFIG)."""
import pytest
from controller_helpers import Harness

from tierlog.protocol.errors import ErrorCode

TIERED = {"remote.storage.enable": "true"}


def _create(h, name, configs):
    topic = {"Name": name, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [],
             "Configs": [{"Name": k, "Value": v} for k, v in configs.items()]}
    r = h.call(19, 7, {"Topics": [topic], "timeoutMs": 1000, "validateOnly": False})
    return r.response["Topics"][0]


def _alter(h, name, *ops):
    res = {"ResourceType": 2, "ResourceName": name,
           "Configs": [{"Name": n, "ConfigOperation": 0, "Value": v} for n, v in ops]}
    return h.call(44, 1, {"Resources": [res], "ValidateOnly": False}).response["Responses"][0]


@pytest.fixture
def h():
    harness = Harness(remote_log_storage_system_enable=True)
    harness.start_brokers(1)
    return harness


def test_a_tiered_topic_is_created(h):
    out = _create(h, "t", {**TIERED, "local.retention.bytes": "1000", "retention.bytes": "5000"})
    assert out["ErrorCode"] == ErrorCode.NONE
    assert h.qc.image.topics["t"].configs["remote.storage.enable"] == "true"


@pytest.mark.parametrize("configs, words", [
    ({**TIERED, "cleanup.policy": "compact"}, "cleanup.policy=delete"),
    ({**TIERED, "cleanup.policy": "delete,compact"}, "cleanup.policy=delete"),
    ({**TIERED, "local.retention.bytes": "6000", "retention.bytes": "5000"}, "local.retention.bytes"),
    ({**TIERED, "local.retention.ms": "-1", "retention.ms": "60000"}, "local.retention.ms"),
])
def test_bad_tiered_configs_get_invalid_config(h, configs, words):
    out = _create(h, "t", configs)
    assert out["ErrorCode"] == ErrorCode.INVALID_CONFIG and words in out["ErrorMessage"]
    assert "t" not in h.qc.image.topics


def test_internal_topics_are_never_tiered(h):
    out = _create(h, "__internal", TIERED)
    assert out["ErrorCode"] == ErrorCode.INVALID_CONFIG and "Internal topic" in out["ErrorMessage"]


def test_tiering_needs_the_system_enabled():
    h = Harness()
    h.start_brokers(1)
    out = _create(h, "t", TIERED)
    assert out["ErrorCode"] == ErrorCode.INVALID_CONFIG
    assert "remote.log.storage.system.enable" in out["ErrorMessage"]


def test_tiering_turned_on_for_an_existing_topic(h):
    assert _create(h, "t", {})["ErrorCode"] == ErrorCode.NONE
    assert _alter(h, "t", ("remote.storage.enable", "true"))["ErrorCode"] == ErrorCode.NONE
    assert h.qc.image.topics["t"].configs["remote.storage.enable"] == "true"


def test_compaction_cannot_be_turned_on_for_a_tiered_topic(h):
    _create(h, "t", TIERED)
    out = _alter(h, "t", ("cleanup.policy", "compact"))
    assert out["ErrorCode"] == ErrorCode.INVALID_CONFIG


def test_tiering_turned_off_only_with_delete_on_disable(h):
    _create(h, "t", TIERED)
    out = _alter(h, "t", ("remote.storage.enable", "false"))
    assert out["ErrorCode"] == ErrorCode.INVALID_CONFIG and "remote.log.delete.on.disable" in out["ErrorMessage"]
    out = _alter(h, "t", ("remote.storage.enable", "false"), ("remote.log.delete.on.disable", "true"))
    assert out["ErrorCode"] == ErrorCode.NONE
