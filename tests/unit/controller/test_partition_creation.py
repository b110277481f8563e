"""CreatePartitions (37) on the controller: PartitionRecords for the new partitions, Kafka's errors."""
from collections import Counter

from controller_helpers import Harness

from tierlog.metadata.cluster_records import PartitionRecord
from tierlog.protocol.errors import ErrorCode


def _grow(h, topics, validate_only=False, version=3):
    return h.call(37, version, {"Topics": topics, "TimeoutMs": 1000, "ValidateOnly": validate_only})


def _t(name, count, assignments=None):
    return {"Name": name, "Count": count,
            "Assignments": None if assignments is None else [{"BrokerIds": a} for a in assignments]}


def _harness(brokers=3, partitions=2, rf=2):
    h = Harness()
    h.start_brokers(brokers)
    h.create_topic("t", partitions=partitions, rf=rf)
    return h


def test_new_partitions_are_placed_over_usable_brokers():
    h = _harness()
    r = _grow(h, [_t("t", 8)])
    assert r.response["Results"] == [{"Name": "t", "ErrorCode": 0, "ErrorMessage": None}]
    assert [rec.partition_id for rec in r.records] == list(range(2, 8))
    assert all(isinstance(rec, PartitionRecord) and rec.leader_epoch == 0 for rec in r.records)
    parts = h.qc.image.topics["t"].partitions
    assert len(parts) == 8
    assert all(len(p.replicas) == 2 and len(set(p.replicas)) == 2 and p.isr == p.replicas for p in parts)
    assert parts[5].leader == parts[5].replicas[0]
    leaders = Counter(p.leader for p in parts[2:])
    assert sorted(leaders) == [1, 2, 3] and max(leaders.values()) - min(leaders.values()) <= 1


def test_manual_assignments():
    h = _harness()
    r = _grow(h, [_t("t", 4, [[3, 1], [2, 3]])])
    assert r.response["Results"][0]["ErrorCode"] == 0
    parts = h.qc.image.topics["t"].partitions
    assert (parts[2].replicas, parts[2].leader, parts[3].replicas) == ((3, 1), 3, (2, 3))


def test_errors():
    h = _harness()
    cases = [(_t("nope", 3), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
             (_t("t", 2), ErrorCode.INVALID_PARTITIONS),
             (_t("t", 1), ErrorCode.INVALID_PARTITIONS),
             (_t("t", 100_000), ErrorCode.INVALID_PARTITIONS),
             (_t("t", 4, [[1, 2]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT),           # one list for two partitions
             (_t("t", 3, [[1]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT),              # replication factor 1, not 2
             (_t("t", 3, [[1, 1]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
             (_t("t", 3, [[1, 9]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT),           # broker 9 not registered
             (_t("t", 3, [[]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT)]
    for topic, code in cases:
        r = _grow(h, [topic])
        assert r.response["Results"][0]["ErrorCode"] == code, topic
        assert r.records == []
    assert len(h.qc.image.topics["t"].partitions) == 2


def test_too_few_usable_brokers_for_the_replication_factor():
    h = _harness(brokers=2, rf=2)
    h.heartbeat(2, want_fence=True)
    r = _grow(h, [_t("t", 3)])
    assert r.response["Results"][0]["ErrorCode"] == ErrorCode.INVALID_REPLICATION_FACTOR
    r = _grow(h, [_t("t", 3, [[2, 1]])])             # a fenced broker may hold a replica, not be the only one
    assert r.response["Results"][0]["ErrorCode"] == 0
    assert h.qc.image.topics["t"].partitions[2].isr == (1,)


def test_validate_only_and_duplicates():
    h = _harness()
    h.create_topic("u")
    r = _grow(h, [_t("t", 5), _t("u", 3), _t("u", 4)], validate_only=True)
    assert [(x["Name"], x["ErrorCode"]) for x in r.response["Results"]] == [
        ("t", 0), ("u", ErrorCode.INVALID_REQUEST)]
    assert r.records == [] and len(h.qc.image.topics["t"].partitions) == 2


def test_a_standby_answers_not_controller():
    h = _harness()
    h.qc.on_leader_change(False, h.qc.committed_image)
    assert _grow(h, [_t("t", 3)]).response["Results"][0]["ErrorCode"] == ErrorCode.NOT_CONTROLLER
