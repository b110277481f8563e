"""Partition reassignment on the controller: AlterPartitionReassignments (45), ListPartitionReassignments (46)
and the completion through AlterPartition (56)."""
from controller_helpers import Harness

from tierlog.controller.reassignment import Target, maybe_complete, start
from tierlog.metadata.cluster_records import NO_LEADER_CHANGE
from tierlog.protocol.errors import ErrorCode

ALTER, LIST, ALTER_PARTITION, ELECT = 45, 46, 56, 43


def _setup(brokers=5, replicas=(1, 2), configs=None, **controller_config):
    h = Harness(**controller_config)
    h.start_brokers(brokers)
    r = h.call(19, 7, {"Topics": [{"Name": "t", "NumPartitions": -1, "ReplicationFactor": -1,
                                   "Assignments": [{"PartitionIndex": 0, "BrokerIds": list(replicas)}],
                                   "Configs": [{"Name": k, "Value": v} for k, v in (configs or {}).items()]}],
                       "timeoutMs": 1000, "validateOnly": False})
    assert r.response["Topics"][0]["ErrorCode"] == 0, r.response
    return h


def _part(h):
    return h.qc.image.topics["t"].partitions[0]


def _reassign(h, replicas, version=1, allow_rf_change=True, index=0, topic="t"):
    req = {"TimeoutMs": 1000, "AllowReplicationFactorChange": allow_rf_change,
           "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": index,
                                                      "Replicas": None if replicas is None else list(replicas)}]}]}
    return h.call(ALTER, version, req)


def _code(r):
    return r.response["Responses"][0]["Partitions"][0]["ErrorCode"]


def _isr(h, isr, version=3, sizes=None):
    """The leader proposes ``isr`` (AlterPartition); ``sizes``: KIP-1303 LocalLogSizeBytes per broker (v4)."""
    part = _part(h)
    pd = {"PartitionIndex": 0, "LeaderEpoch": part.leader_epoch, "PartitionEpoch": part.partition_epoch,
          "LeaderRecoveryState": 0}
    if version >= 3:
        pd["NewIsrWithEpochs"] = [{"BrokerId": b, "BrokerEpoch": h.epochs[b],
                                   "LocalLogSizeBytes": (sizes or {}).get(b, -1)} for b in isr]
    else:
        pd["NewIsr"] = list(isr)
    t = {"TopicId": h.qc.image.topics["t"].topic_id} if version >= 2 else {"TopicName": "t"}
    r = h.call(ALTER_PARTITION, version, {"BrokerId": part.leader, "BrokerEpoch": h.epochs[part.leader],
                                          "Topics": [{**t, "Partitions": [pd]}]})
    return r, r.response["Topics"][0]["Partitions"][0]


def _list(h, topics=None):
    return h.call(LIST, 0, {"TimeoutMs": 1000, "Topics": topics}).response


def test_the_pure_rules():
    assert start((1, 2), (3, 4)) == ((3, 4, 1, 2), (3, 4), (1, 2))
    assert start((3, 4, 1, 2), (4, 5)) == ((4, 5, 1, 2, 3), (5,), (1, 2, 3))
    assert start((1, 2, 3), (3, 2, 1)) == ((3, 2, 1), (), ())
    moving = Target((3, 4, 1, 2), (1, 2, 3), (3, 4), (1, 2))
    assert maybe_complete(moving) is moving                              # 4 is not in the ISR yet
    assert maybe_complete(Target((3, 4, 1, 2), (1, 4, 2, 3), (3, 4), (1, 2))) == Target((3, 4), (4, 3))
    only_removing = Target((1, 2, 3), (3,), (), (3,))
    assert maybe_complete(only_removing) is only_removing                # the ISR would be empty


def test_start_writes_the_merged_replica_list():
    h = _setup()
    before = _part(h)
    r = _reassign(h, (3, 4))
    assert _code(r) == 0 and len(r.records) == 1
    rec = r.records[0]
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas) == ((3, 4, 1, 2), (3, 4), (1, 2))
    assert rec.isr is None and rec.leader == NO_LEADER_CHANGE       # ISR and leader unchanged
    p = _part(h)
    assert p.replicas == (3, 4, 1, 2) and p.isr == (1, 2) and p.leader == 1
    assert p.leader_epoch == before.leader_epoch and p.partition_epoch == before.partition_epoch + 1
    assert r.response["AllowReplicationFactorChange"] is True
    assert _list(h)["Topics"] == [{"Name": "t", "Partitions": [
        {"PartitionIndex": 0, "Replicas": [3, 4, 1, 2], "AddingReplicas": [3, 4], "RemovingReplicas": [1, 2]}]}]


def test_completion_when_the_last_adding_replica_joins_the_isr_moves_the_leader():
    h = _setup()
    _reassign(h, (3, 4))
    r, res = _isr(h, (1, 2, 3))
    assert res["ErrorCode"] == 0 and _part(h).isr == (1, 2, 3) and _part(h).adding_replicas == (3, 4)
    before = _part(h)
    r, res = _isr(h, (1, 2, 3, 4))
    assert res["ErrorCode"] == ErrorCode.NEW_LEADER_ELECTED       # written, but the sender no longer leads
    assert len(r.records) == 1
    p = _part(h)
    assert p.replicas == (3, 4) and p.isr == (3, 4) and p.leader == 3
    assert p.adding_replicas == () and p.removing_replicas == ()
    assert p.leader_epoch == before.leader_epoch + 1 and p.partition_epoch == before.partition_epoch + 1
    assert _list(h)["Topics"] == []


def test_completion_answers_fenced_leader_epoch_before_v2():
    h = _setup()
    _reassign(h, (3, 4))
    _, res = _isr(h, (1, 2, 3, 4), version=1)
    assert res["ErrorCode"] == ErrorCode.FENCED_LEADER_EPOCH
    assert _part(h).replicas == (3, 4)


def test_completion_keeps_a_leader_in_the_target_and_bumps_its_epoch():
    h = _setup()
    _reassign(h, (1, 3))
    before = _part(h)
    r, res = _isr(h, (1, 2, 3))
    assert r.records[0].leader == 1                       # same leader named: a leader epoch bump
    p = _part(h)
    assert p.replicas == (1, 3) and p.isr == (1, 3) and p.leader == 1
    assert p.leader_epoch == before.leader_epoch + 1
    assert res["ErrorCode"] == 0 and res["LeaderEpoch"] == p.leader_epoch and res["Isr"] == [1, 3]
    assert res["PartitionEpoch"] == p.partition_epoch


def test_nothing_to_add_completes_at_once():
    h = _setup(replicas=(1, 2, 3))
    before = _part(h)
    r = _reassign(h, (2, 1))
    assert _code(r) == 0
    p = _part(h)
    assert p.replicas == (2, 1) and p.isr == (1, 2) and p.adding_replicas == p.removing_replicas == ()
    assert p.leader == 1 and p.leader_epoch == before.leader_epoch + 1        # 3 left: epoch bump
    r = _reassign(h, (1, 2))                                                  # a reorder only
    assert _part(h).replicas == (1, 2) and _part(h).leader_epoch == p.leader_epoch
    assert r.records[0].leader == NO_LEADER_CHANGE
    assert _reassign(h, (1, 2)).records == []                                 # nothing changes


def test_cancel_reverts_to_the_original_replicas():
    h = _setup()
    _reassign(h, (3, 4))
    _isr(h, (1, 2, 3))
    before = _part(h)
    r = _reassign(h, None)
    assert _code(r) == 0
    p = _part(h)
    assert p.replicas == (1, 2) and p.isr == (1, 2) and p.leader == 1
    assert p.adding_replicas == p.removing_replicas == ()
    assert p.leader_epoch == before.leader_epoch + 1
    assert _code(_reassign(h, None)) == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


def test_cancel_moves_a_leader_that_was_being_added():
    h = _setup()
    _reassign(h, (3, 4))
    _isr(h, (1, 2, 3))
    r = h.call(ELECT, 1, {"ElectionType": 0, "TopicPartitions": [{"Topic": "t", "Partitions": [0]}],
                          "TimeoutMs": 1000})
    assert r.response["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"] == 0
    assert _part(h).leader == 3                           # first of (3, 4, 1, 2), in the ISR
    _reassign(h, None)
    p = _part(h)
    assert p.replicas == (1, 2) and p.isr == (1, 2) and p.leader == 1


def test_cancel_that_needs_an_unclean_election():
    for unclean in (False, True):
        h = _setup(configs={"unclean.leader.election.enable": "true"} if unclean else None)
        _reassign(h, (3, 4))
        _isr(h, (1, 2, 3))
        h.call(ELECT, 1, {"ElectionType": 0, "TopicPartitions": [{"Topic": "t", "Partitions": [0]}],
                          "TimeoutMs": 1000})
        _isr(h, (3,))                                     # only an adding replica is left in the ISR
        r = _reassign(h, None)
        if not unclean:
            assert _code(r) == ErrorCode.INVALID_REPLICA_ASSIGNMENT and r.records == []
            assert _part(h).adding_replicas == (3, 4)
        else:
            assert _code(r) == 0
            p = _part(h)
            # Kafka's revert puts the first original replica in the ISR itself, so the election is clean
            assert p.replicas == (1, 2) and p.isr == (1,) and p.leader == 1 and p.leader_recovery_state == 0


def test_a_new_reassignment_replaces_the_ongoing_one():
    h = _setup()
    _reassign(h, (3, 4))
    _isr(h, (1, 2, 3))
    r = _reassign(h, (4, 5))
    assert _code(r) == 0
    p = _part(h)
    assert p.replicas == (4, 5, 1, 2, 3) and p.adding_replicas == (5,) and p.removing_replicas == (1, 2, 3)
    assert p.isr == (1, 2, 3) and p.leader == 1
    _isr(h, (1, 2, 3, 5))                                 # 4 is still missing
    assert _part(h).adding_replicas == (5,)
    _isr(h, (1, 2, 3, 5, 4))
    p = _part(h)
    assert p.replicas == (4, 5) and p.isr == (5, 4) and p.leader == 4 and p.adding_replicas == ()


def test_bad_input_gets_kafka_error_codes_and_writes_nothing():
    h = _setup(brokers=4)
    cases = [
        ({"replicas": (3, 4), "topic": "nope"}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ({"replicas": (3, 4), "index": 7}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ({"replicas": ()}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({"replicas": (3, 3)}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({"replicas": (3, 9)}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({"replicas": (3, 4, 1), "allow_rf_change": False}, ErrorCode.INVALID_REPLICATION_FACTOR),
        ({"replicas": None}, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS),
    ]
    for kw, code in cases:
        r = _reassign(h, **kw)
        assert _code(r) == code, (kw, r.response)
        assert r.records == []
    r = _reassign(h, (3, 4, 1), version=0, allow_rf_change=False)    # v0 has no such field: allowed
    assert _code(r) == 0 and "AllowReplicationFactorChange" in r.response
    r = _reassign(h, (2, 3, 4), allow_rf_change=False)                # RF of the ongoing one: 3
    assert _code(r) == 0
    twice = {"TimeoutMs": 1000, "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "Replicas": [1, 2]},
                                                                         {"PartitionIndex": 0, "Replicas": [3]}]}]}
    r = h.call(ALTER, 1, twice)
    codes = [p["ErrorCode"] for p in r.response["Responses"][0]["Partitions"]]
    assert codes == [0, ErrorCode.INVALID_REQUEST] and len(r.records) == 1


def test_list_by_topic_and_at_the_committed_offset():
    h = _setup()
    r = h.call(ALTER, 1, {"TimeoutMs": 1000, "Topics": [{"Name": "t", "Partitions": [
        {"PartitionIndex": 0, "Replicas": [3, 4]}]}]}, commit=False)
    assert _code(r) == 0
    assert _list(h)["Topics"] == []                       # not committed yet
    h.qc.on_commit(r.last_offset)
    named = _list(h, [{"Name": "t", "PartitionIndexes": [0, 5]}, {"Name": "nope", "PartitionIndexes": [0]}])
    assert [t["Name"] for t in named["Topics"]] == ["t"] and named["Topics"] == _list(h)["Topics"]
    assert _list(h, [{"Name": "t", "PartitionIndexes": [3]}])["Topics"] == []


def test_standby_answers_not_controller():
    h = _setup()
    h.qc.on_leader_change(False, h.qc.committed_image)
    r = _reassign(h, (3, 4))
    assert r.response["ErrorCode"] == ErrorCode.NOT_CONTROLLER and r.records == []
    assert h.call(LIST, 0, {"TimeoutMs": 1000, "Topics": None}).response["ErrorCode"] == ErrorCode.NOT_CONTROLLER


def test_the_log_and_a_snapshot_rebuild_the_same_reassignment_state():
    from tierlog.metadata.cluster_records import decode, encode
    from tierlog.metadata.delta import MetadataDelta
    from tierlog.metadata.image import MetadataImage
    from tierlog.metadata.snapshot import load_snapshot, snapshot_record_bytes

    h = _setup()
    _reassign(h, (3, 4))
    _isr(h, (1, 2, 3))
    want = _part(h)
    delta = MetadataDelta(MetadataImage.empty("c1"))
    for record in h.written:                      # every record through its wire encoding, as a standby replays
        delta.replay(decode(encode(record)))
    assert delta.apply().topics["t"].partitions[0] == want
    assert load_snapshot(snapshot_record_bytes(h.qc.image)).topics["t"].partitions[0] == want
    _isr(h, (1, 2, 3, 4))                         # completion, also through the wire encoding
    delta = MetadataDelta(MetadataImage.empty("c1"))
    for record in h.written:
        delta.replay(decode(encode(record)))
    assert delta.apply().topics["t"].partitions[0] == _part(h)


def test_completion_elects_the_new_leader_with_the_kip_1303_eligibility_sort():
    sizes = {1: 10_000, 2: 10_000, 3: 10, 4: 10_000}         # 3's local log is too small to lead
    for threshold, leader in ((-1, 3), (1000, 4)):
        h = _setup(eligible_local_log_bytes=threshold)
        _reassign(h, (3, 4))
        _, res = _isr(h, (1, 2, 3, 4), version=4, sizes=sizes)
        assert res["ErrorCode"] == ErrorCode.NEW_LEADER_ELECTED
        p = _part(h)
        assert p.replicas == (3, 4) and p.leader == leader, (threshold, p)
        assert p.coverage()[3].local_log_size_bytes == 10    # the reported coverage is stored too
