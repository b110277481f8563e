from collections import Counter

from controller_helpers import Harness

from tierlog.metadata.cluster_records import (
    ConfigRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from tierlog.metadata.group_rules import broker_group_settings
from tierlog.protocol.errors import ErrorCode


def _create(h, topics, validate_only=False, version=7):
    return h.call(19, version, {"Topics": topics, "timeoutMs": 1000, "validateOnly": validate_only})


def _topic(name, n=1, rf=1, configs=None, assignments=None):
    return {"Name": name, "NumPartitions": n, "ReplicationFactor": rf, "Assignments": assignments or [],
            "Configs": [{"Name": k, "Value": v} for k, v in (configs or {}).items()]}


def test_create_topic_records_and_answer():
    h = Harness()
    h.start_brokers(3, racks=3)
    r = h.create_topic("t", partitions=3, rf=2, configs={"retention.ms": "1000"})
    kinds = [type(x) for x in r.records]
    assert kinds == [TopicRecord, ConfigRecord] + [PartitionRecord] * 3
    res = r.response["Topics"][0]
    assert res["ErrorCode"] == 0 and res["NumPartitions"] == 3 and res["ReplicationFactor"] == 2
    assert res["TopicId"] == r.records[0].topic_id != bytes(16)
    assert {"Name": "retention.ms", "Value": "1000", "ReadOnly": False, "ConfigSource": 1,
            "IsSensitive": False} in res["Configs"]
    topic = h.qc.image.topics["t"]
    assert topic.configs["retention.ms"] == "1000"
    for p in topic.partitions:
        assert p.leader == p.replicas[0] and p.isr == p.replicas and p.leader_epoch == 0


def test_defaults_for_minus_one():
    h = Harness(num_partitions=4, default_replication_factor=2)
    h.start_brokers(2)
    r = h.create_topic("t", partitions=-1, rf=-1)
    assert r.response["Topics"][0]["NumPartitions"] == 4
    assert r.response["Topics"][0]["ReplicationFactor"] == 2


def test_validate_only_writes_nothing():
    h = Harness()
    h.start_brokers(1)
    r = _create(h, [_topic("t")], validate_only=True)
    assert r.records == [] and r.response["Topics"][0]["ErrorCode"] == 0
    assert "t" not in h.qc.image.topics


def test_create_error_codes():
    h = Harness()
    h.start_brokers(2)
    h.create_topic("exists")
    cases = [
        (_topic("exists"), ErrorCode.TOPIC_ALREADY_EXISTS),
        (_topic("bad name!"), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (_topic("a" * 250), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (_topic("p0", n=0), ErrorCode.INVALID_PARTITIONS),
        (_topic("rf0", rf=0), ErrorCode.INVALID_REPLICATION_FACTOR),
        (_topic("rf3", rf=3), ErrorCode.INVALID_REPLICATION_FACTOR),
        (_topic("cfg", configs={"no.such.config": "1"}), ErrorCode.INVALID_CONFIG),
        (_topic("cfg2", configs={"retention.ms": "soon"}), ErrorCode.INVALID_CONFIG),
        (_topic("man", n=2, assignments=[{"PartitionIndex": 0, "BrokerIds": [1]}]), ErrorCode.INVALID_REQUEST),
        (_topic("man2", n=-1, rf=-1, assignments=[{"PartitionIndex": 0, "BrokerIds": [1, 1]}]),
         ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (_topic("man3", n=-1, rf=-1, assignments=[{"PartitionIndex": 0, "BrokerIds": [9]}]),
         ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ]
    for topic, code in cases:
        r = _create(h, [topic])
        assert r.response["Topics"][0]["ErrorCode"] == code, (topic["Name"], r.response)
        assert r.records == []


def test_duplicate_in_one_request():
    h = Harness()
    h.start_brokers(1)
    r = _create(h, [_topic("t"), _topic("t")])
    assert [t["ErrorCode"] for t in r.response["Topics"]] == [0, ErrorCode.INVALID_REQUEST]


def test_manual_assignment():
    h = Harness()
    h.start_brokers(3)
    r = _create(h, [_topic("m", n=-1, rf=-1, assignments=[{"PartitionIndex": 0, "BrokerIds": [3, 1]},
                                                           {"PartitionIndex": 1, "BrokerIds": [2, 3]}])])
    assert r.response["Topics"][0]["ErrorCode"] == 0
    parts = h.qc.image.topics["m"].partitions
    assert [p.replicas for p in parts] == [(3, 1), (2, 3)] and [p.leader for p in parts] == [3, 2]


def test_placement_skips_fenced_brokers_and_spreads_leaders():
    h = Harness()
    h.start_brokers(4, racks=2)
    h.register(5)                                 # registered but fenced
    h.create_topic("t", partitions=100, rf=2)
    parts = h.qc.image.topics["t"].partitions
    assert all(5 not in p.replicas for p in parts)
    leaders = Counter(p.leader for p in parts)
    assert sorted(leaders.values()) == [25, 25, 25, 25]
    rack = {b: h.qc.image.brokers[b].rack for b in range(1, 5)}
    assert all(rack[p.replicas[0]] != rack[p.replicas[1]] for p in parts)


def test_topic_ids_come_from_the_rng():
    a, b = Harness(), Harness()
    for h in (a, b):
        h.start_brokers(1)
        h.create_topic("t")
    assert a.qc.image.topics["t"].topic_id == b.qc.image.topics["t"].topic_id


def test_delete_by_name_and_id():
    h = Harness()
    h.start_brokers(1)
    h.create_topic("a")
    h.create_topic("b")
    tid = h.qc.image.topics["b"].topic_id
    r = h.call(20, 6, {"Topics": [{"Name": "a", "TopicId": bytes(16)}, {"Name": None, "TopicId": tid},
                                  {"Name": "zz", "TopicId": bytes(16)}, {"Name": None, "TopicId": b"\x01" * 16}],
                       "TimeoutMs": 100})
    assert [x["ErrorCode"] for x in r.response["Responses"]] == [0, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                                 ErrorCode.UNKNOWN_TOPIC_ID]
    assert r.response["Responses"][1]["Name"] == "b"
    assert all(isinstance(x, RemoveTopicRecord) for x in r.records) and len(r.records) == 2
    assert not h.qc.image.topics


def test_delete_v5_and_disabled():
    h = Harness()
    h.start_brokers(1)
    h.create_topic("a")
    r = h.call(20, 5, {"TopicNames": ["a", "a"], "TimeoutMs": 100})
    assert [x["ErrorCode"] for x in r.response["Responses"]] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    h2 = Harness(delete_topic_enable=False)
    h2.start_brokers(1)
    h2.create_topic("a")
    r = h2.call(20, 5, {"TopicNames": ["a"], "TimeoutMs": 100})
    assert r.response["Responses"][0]["ErrorCode"] == ErrorCode.TOPIC_DELETION_DISABLED and r.records == []


def _alter(h, resources, validate_only=False):
    return h.call(44, 1, {"Resources": resources, "ValidateOnly": validate_only})


def _res(kind, name, *ops):
    return {"ResourceType": kind, "ResourceName": name,
            "Configs": [{"Name": n, "ConfigOperation": op, "Value": v} for n, op, v in ops]}


def test_incremental_alter_topic_configs():
    h = Harness()
    h.start_brokers(1)
    h.create_topic("t", configs={"retention.ms": "1000"})
    r = _alter(h, [_res(2, "t", ("retention.ms", 1, None), ("cleanup.policy", 2, "compact"),
                        ("segment.bytes", 0, "1048576"))])
    assert r.response["Responses"][0]["ErrorCode"] == 0
    assert dict(h.qc.image.topics["t"].configs) == {"cleanup.policy": "delete,compact", "segment.bytes": "1048576"}
    assert ConfigRecord(2, "t", "retention.ms", None) in r.records


def test_incremental_alter_errors_and_validate_only():
    h = Harness()
    h.start_brokers(1)
    h.create_topic("t")
    cases = [(_res(2, "nope", ("retention.ms", 0, "1")), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
             (_res(2, "t", ("bogus", 0, "1")), ErrorCode.INVALID_CONFIG),
             (_res(2, "t", ("retention.ms", 2, "1")), ErrorCode.INVALID_CONFIG),     # APPEND on a non-list
             (_res(2, "t", ("retention.ms", 0, "x")), ErrorCode.INVALID_CONFIG),
             (_res(2, "t", ("retention.ms", 7, "1")), ErrorCode.INVALID_REQUEST),
             (_res(9, "x"), ErrorCode.INVALID_REQUEST)]
    for res, code in cases:
        r = _alter(h, [res])
        assert r.response["Responses"][0]["ErrorCode"] == code, res
        assert r.records == []
    r = _alter(h, [_res(2, "t"), _res(2, "t")])
    assert [x["ErrorCode"] for x in r.response["Responses"]] == [0, ErrorCode.INVALID_REQUEST]
    r = _alter(h, [_res(2, "t", ("retention.ms", 0, "5"))], validate_only=True)
    assert r.response["Responses"][0]["ErrorCode"] == 0 and r.records == []


def test_incremental_alter_broker_configs():
    h = Harness()
    h.start_brokers(1)
    r = _alter(h, [_res(4, "", ("leader.election.eligible.local.log.ms", 0, "60000")),
                   _res(4, "1", ("log.retention.ms", 0, "5"))])
    assert [x["ErrorCode"] for x in r.response["Responses"]] == [0, 0]
    assert h.qc.image.cluster_configs()["leader.election.eligible.local.log.ms"] == "60000"
    assert h.qc.image.broker_configs(1)["log.retention.ms"] == "5"
    r = _alter(h, [_res(4, "abc", ("x", 0, "1"))])
    assert r.response["Responses"][0]["ErrorCode"] == ErrorCode.INVALID_REQUEST


def test_kip1023_config_is_a_cluster_wide_boolean():
    h = Harness()
    h.start_brokers(1)
    r = _alter(h, [_res(4, "", ("follower.fetch.last.tiered.offset.enable", 0, "true"))])
    assert r.response["Responses"][0]["ErrorCode"] == 0
    assert h.qc.image.cluster_configs()["follower.fetch.last.tiered.offset.enable"] == "true"
    r = _alter(h, [_res(4, "", ("follower.fetch.last.tiered.offset.enable", 0, "yes"))])
    assert r.response["Responses"][0]["ErrorCode"] == ErrorCode.INVALID_CONFIG
    assert h.qc.image.cluster_configs()["follower.fetch.last.tiered.offset.enable"] == "true"


def test_allocate_producer_ids():
    h = Harness()
    h.start_brokers(2)
    r1 = h.call(67, 0, {"BrokerId": 1, "BrokerEpoch": h.epochs[1]})
    r2 = h.call(67, 0, {"BrokerId": 2, "BrokerEpoch": h.epochs[2]})
    assert (r1.response["ProducerIdStart"], r1.response["ProducerIdLen"]) == (0, 1000)
    assert r2.response["ProducerIdStart"] == 1000 and h.qc.image.next_producer_id == 2000
    assert h.call(67, 0, {"BrokerId": 1, "BrokerEpoch": 99}).response["ErrorCode"] == ErrorCode.STALE_BROKER_EPOCH
    assert h.call(67, 0, {"BrokerId": 7, "BrokerEpoch": 0}).response["ErrorCode"] == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_reserved_names_cannot_be_created_or_deleted():
    h = Harness()
    h.start_brokers(1)
    r = _create(h, [_topic("__cluster_metadata")])
    assert r.records == [] and r.response["Topics"][0]["ErrorCode"] == ErrorCode.INVALID_REQUEST
    assert "__cluster_metadata" not in h.qc.image.topics
    h.create_topic("__consumer_offsets", partitions=3)
    tid = h.qc.image.topics["__consumer_offsets"].topic_id
    r = h.call(20, 6, {"Topics": [{"Name": "__consumer_offsets", "TopicId": bytes(16)},
                                  {"Name": None, "TopicId": tid}], "TimeoutMs": 100})
    assert r.records == []
    assert [t["ErrorCode"] for t in r.response["Responses"]] == [ErrorCode.INVALID_REQUEST] * 2


def test_incremental_alter_group_configs():
    """KIP-848 group configs (resource type 32): validated as a whole against the controller's
    group.consumer.* bounds, one ConfigRecord per change, any group id but the default resource."""
    h = Harness(group_settings=broker_group_settings({"group.consumer.min.session.timeout.ms": 3000,
                                                      "group.consumer.min.heartbeat.interval.ms": 500}))
    r = _alter(h, [_res(32, "g", ("consumer.session.timeout.ms", 0, "3000"),
                        ("consumer.heartbeat.interval.ms", 0, "1000"))])
    assert r.response["Responses"][0]["ErrorCode"] == 0
    assert r.records == [ConfigRecord(32, "g", "consumer.heartbeat.interval.ms", "1000"),
                         ConfigRecord(32, "g", "consumer.session.timeout.ms", "3000")]
    assert dict(h.qc.image.group_config("g")) == {"consumer.session.timeout.ms": "3000",
                                                  "consumer.heartbeat.interval.ms": "1000"}
    bad = [_res(32, "g", ("consumer.session.timeout.ms", 0, "2999")), _res(32, "h", ("no.such", 0, "1")),
           _res(32, "", ("consumer.session.timeout.ms", 0, "3000")),
           _res(32, "k", ("consumer.heartbeat.interval.ms", 0, "45000"))]      # not below the session timeout
    codes = [x["ErrorCode"] for x in _alter(h, bad).response["Responses"]]
    assert codes == [ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_REQUEST,
                     ErrorCode.INVALID_CONFIG]
    r = _alter(h, [_res(32, "g", ("consumer.session.timeout.ms", 1, None), ("consumer.heartbeat.interval.ms", 1, None))])
    assert r.records == [ConfigRecord(32, "g", "consumer.heartbeat.interval.ms", None),
                         ConfigRecord(32, "g", "consumer.session.timeout.ms", None)]
    assert dict(h.qc.image.group_config("g")) == {} and "g" not in h.qc.image.group_configs


def test_incremental_alter_client_metrics_subscriptions():
    """KIP-714 subscriptions (resource type 16): Kafka's three configs checked, list operations on
    metrics and match, one ConfigRecord per change; "" is INVALID_REQUEST."""
    h = Harness()
    r = _alter(h, [_res(16, "producers", ("metrics", 0, "org.apache.kafka.producer."), ("interval.ms", 0, "1000"))])
    assert r.response["Responses"][0]["ErrorCode"] == 0
    assert r.records == [ConfigRecord(16, "producers", "interval.ms", "1000"),
                         ConfigRecord(16, "producers", "metrics", "org.apache.kafka.producer.")]
    r = _alter(h, [_res(16, "producers", ("metrics", 2, "org.apache.kafka.consumer."))])          # APPEND
    assert dict(h.qc.image.client_metrics["producers"])["metrics"] == \
        "org.apache.kafka.producer.,org.apache.kafka.consumer."
    bad = [_res(16, "", ("interval.ms", 0, "1000")), _res(16, "s1", ("interval.ms", 0, "50")),
           _res(16, "s2", ("color", 0, "red")), _res(16, "s3", ("match", 0, "client_rack=x"))]
    codes = [x["ErrorCode"] for x in _alter(h, bad).response["Responses"]]
    assert codes == [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_CONFIG,
                     ErrorCode.INVALID_CONFIG]
    r = _alter(h, [_res(16, "producers", ("metrics", 1, None), ("interval.ms", 1, None))])
    assert "producers" not in h.qc.image.client_metrics
