"""AlterConfigs (33) on the controller: the given set replaces the resource's dynamic configs."""
from controller_helpers import Harness

from tierlog.metadata.cluster_records import ConfigRecord
from tierlog.protocol.errors import ErrorCode


def _alter(h, resources, validate_only=False, version=2):
    return h.call(33, version, {"Resources": resources, "ValidateOnly": validate_only})


def _res(kind, name, **configs):
    return {"ResourceType": kind, "ResourceName": name,
            "Configs": [{"Name": k.replace("_", "."), "Value": v} for k, v in configs.items()]}


def _harness():
    h = Harness()
    h.start_brokers(1)
    h.create_topic("t", configs={"retention.ms": "1000", "segment.bytes": "1048576"})
    return h


def test_the_given_set_replaces_the_topic_overrides():
    h = _harness()
    r = _alter(h, [_res(2, "t", cleanup_policy="compact", segment_bytes="2097152")])
    assert r.response["Responses"] == [{"ErrorCode": 0, "ErrorMessage": None, "ResourceType": 2,
                                        "ResourceName": "t"}]
    assert dict(h.qc.image.topics["t"].configs) == {"cleanup.policy": "compact", "segment.bytes": "2097152"}
    assert ConfigRecord(2, "t", "retention.ms", None) in r.records


def test_an_empty_set_or_null_values_delete_every_override():
    h = _harness()
    _alter(h, [_res(2, "t", retention_ms=None)])
    assert dict(h.qc.image.topics["t"].configs) == {}


def test_an_unchanged_set_writes_nothing():
    h = _harness()
    r = _alter(h, [_res(2, "t", retention_ms="1000", segment_bytes="1048576")])
    assert r.response["Responses"][0]["ErrorCode"] == 0 and r.records == []


def test_errors_leave_the_configs_alone():
    h = _harness()
    cases = [(_res(2, "nope", retention_ms="1"), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
             (_res(2, "t", bogus="1"), ErrorCode.INVALID_CONFIG),
             (_res(2, "t", retention_ms="soon"), ErrorCode.INVALID_CONFIG),
             (_res(2, "t", remote_storage_enable="true"), ErrorCode.INVALID_CONFIG),    # tiering is off
             (_res(9, "x"), ErrorCode.INVALID_REQUEST)]
    for res, code in cases:
        r = _alter(h, [res])
        assert r.response["Responses"][0]["ErrorCode"] == code, res
        assert r.records == []
    r = _alter(h, [_res(2, "t"), _res(2, "t")])
    assert [x["ErrorCode"] for x in r.response["Responses"]] == [0, ErrorCode.INVALID_REQUEST]
    assert dict(h.qc.image.topics["t"].configs) == {}       # the first one applied: the empty set


def test_validate_only_checks_and_writes_nothing():
    h = _harness()
    r = _alter(h, [_res(2, "t", retention_ms="5"), _res(2, "t2", retention_ms="5")], validate_only=True)
    assert [x["ErrorCode"] for x in r.response["Responses"]] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert r.records == []
    assert dict(h.qc.image.topics["t"].configs) == {"retention.ms": "1000", "segment.bytes": "1048576"}


def test_broker_resources_are_replaced_too():
    h = _harness()
    _alter(h, [_res(4, "1", log_retention_ms="5", log_segment_bytes="1048576")])
    assert dict(h.qc.image.broker_configs(1)) == {"log.retention.ms": "5", "log.segment.bytes": "1048576"}
    r = _alter(h, [_res(4, "1", log_retention_ms="6")], version=0)
    assert dict(h.qc.image.broker_configs(1)) == {"log.retention.ms": "6"}
    assert ConfigRecord(4, "1", "log.segment.bytes", None) in r.records
    assert _alter(h, [_res(4, "abc")]).response["Responses"][0]["ErrorCode"] == ErrorCode.INVALID_REQUEST


def test_group_resources_are_replaced_too():
    """Kafka's legacy AlterConfigs takes GROUP resources (32) like IncrementalAlterConfigs does."""
    h = _harness()
    r = _alter(h, [_res(32, "g", consumer_heartbeat_interval_ms="6000")])
    assert r.response["Responses"][0]["ErrorCode"] == 0
    assert dict(h.qc.image.group_config("g")) == {"consumer.heartbeat.interval.ms": "6000"}
    r = _alter(h, [_res(32, "g", consumer_session_timeout_ms="50000")])
    assert dict(h.qc.image.group_config("g")) == {"consumer.session.timeout.ms": "50000"}
    assert ConfigRecord(32, "g", "consumer.heartbeat.interval.ms", None) in r.records
    bad = _alter(h, [_res(32, "g", consumer_session_timeout_ms="10")])
    assert bad.response["Responses"][0]["ErrorCode"] == ErrorCode.INVALID_CONFIG and bad.records == []


def test_a_standby_answers_not_controller():
    h = _harness()
    h.qc.on_leader_change(False, h.qc.committed_image)
    r = _alter(h, [_res(2, "t")])
    assert r.response["Responses"][0]["ErrorCode"] == ErrorCode.NOT_CONTROLLER
