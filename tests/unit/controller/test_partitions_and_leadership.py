from controller_helpers import Harness

from tierlog.metadata.cluster_records import PartitionChangeRecord, ReplicaLogCoverage
from tierlog.protocol.errors import ErrorCode


def _setup(n=3, rf=3):
    h = Harness()
    h.start_brokers(n)
    h.create_topic("t", partitions=1, rf=rf)
    return h, h.qc.image.topics["t"]


def _ap(h, topic, isr, sender=None, leader_epoch=None, partition_epoch=None, version=3, epochs=None,
        coverage=None, recovery=0):
    part = h.qc.image.topics["t"].partitions[0]
    sender = part.leader if sender is None else sender
    members = []
    for b in isr:
        m = {"BrokerId": b, "BrokerEpoch": (epochs or h.epochs)[b]}
        if coverage and b in coverage:
            m["LocalLogStartTimestamp"], m["LocalLogSizeBytes"] = coverage[b]
        members.append(m)
    pd = {"PartitionIndex": 0, "LeaderEpoch": part.leader_epoch if leader_epoch is None else leader_epoch,
          "LeaderRecoveryState": recovery,
          "PartitionEpoch": part.partition_epoch if partition_epoch is None else partition_epoch}
    if version >= 3:
        pd["NewIsrWithEpochs"] = members
    else:
        pd["NewIsr"] = list(isr)
    t = {"TopicId": topic.topic_id} if version >= 2 else {"TopicName": "t"}
    return h.call(56, version, {"BrokerId": sender, "BrokerEpoch": h.epochs[sender],
                                "Topics": [{**t, "Partitions": [pd]}]})


def _code(r):
    return r.response["Topics"][0]["Partitions"][0]["ErrorCode"]


def test_alter_partition_shrinks_isr():
    h, topic = _setup()
    part = topic.partitions[0]
    others = [b for b in part.replicas if b != part.leader]
    r = _ap(h, topic, [part.leader, others[0]])
    assert _code(r) == 0
    assert r.records == [PartitionChangeRecord(partition_id=0, topic_id=topic.topic_id,
                                               isr=(part.leader, others[0]))]
    now = h.qc.image.topics["t"].partitions[0]
    assert now.isr == (part.leader, others[0]) and now.partition_epoch == part.partition_epoch + 1
    res = r.response["Topics"][0]["Partitions"][0]
    assert res["Isr"] == list(now.isr) and res["PartitionEpoch"] == now.partition_epoch
    assert res["LeaderEpoch"] == now.leader_epoch == part.leader_epoch


def test_alter_partition_fencing_cases():
    h, topic = _setup()
    part = topic.partitions[0]
    follower = next(b for b in part.replicas if b != part.leader)
    assert _code(_ap(h, topic, part.isr, partition_epoch=part.partition_epoch - 1)) == ErrorCode.INVALID_UPDATE_VERSION
    assert _code(_ap(h, topic, part.isr, leader_epoch=part.leader_epoch - 1)) == ErrorCode.FENCED_LEADER_EPOCH
    assert _code(_ap(h, topic, part.isr, leader_epoch=part.leader_epoch + 1)) == ErrorCode.NOT_CONTROLLER
    assert _code(_ap(h, topic, part.isr, sender=follower)) == ErrorCode.INVALID_REQUEST      # Kafka: not the leader
    assert _code(_ap(h, topic, [follower])) == ErrorCode.INVALID_REQUEST          # ISR without the leader
    bad_epochs = dict(h.epochs)
    bad_epochs[follower] += 100
    assert _code(_ap(h, topic, part.isr, epochs=bad_epochs)) == ErrorCode.INELIGIBLE_REPLICA
    assert _code(_ap(h, topic, part.isr, version=1)) == 0                         # no change, nothing written
    r = h.call(56, 3, {"BrokerId": part.leader, "BrokerEpoch": 999, "Topics": []})
    assert r.response["ErrorCode"] == ErrorCode.STALE_BROKER_EPOCH
    r = h.call(56, 3, {"BrokerId": part.leader, "BrokerEpoch": h.epochs[part.leader],
                       "Topics": [{"TopicId": b"\x09" * 16, "Partitions": [{"PartitionIndex": 0, "LeaderEpoch": 0,
                                                                            "NewIsrWithEpochs": [],
                                                                            "PartitionEpoch": 0}]}]})
    assert _code(r) == ErrorCode.UNKNOWN_TOPIC_ID


def test_alter_partition_fenced_member_is_ineligible():
    h, topic = _setup()
    part = topic.partitions[0]
    follower = next(b for b in part.replicas if b != part.leader)
    shrink = _ap(h, topic, [b for b in part.isr if b != follower])
    assert _code(shrink) == 0
    h.now = 9000
    for b in h.epochs:
        if b != follower:
            h.heartbeat(b)
    h.qc.tick(h.now)                                  # the follower is fenced
    assert h.qc.image.brokers[follower].fenced
    part = h.qc.image.topics["t"].partitions[0]
    assert _code(_ap(h, topic, tuple(part.isr) + (follower,))) == ErrorCode.INELIGIBLE_REPLICA
    assert _code(_ap(h, topic, tuple(part.isr) + (follower,), version=1)) == ErrorCode.OPERATION_NOT_ATTEMPTED


def test_alter_partition_stores_local_log_state():
    h, topic = _setup()
    part = topic.partitions[0]
    cov = {b: (1000 + b, 10 * b) for b in part.isr}
    r = _ap(h, topic, part.isr, version=4, coverage=cov)
    assert _code(r) == 0 and len(r.records) == 1 and r.records[0].isr is None
    stored = h.qc.image.topics["t"].partitions[0].coverage()
    assert stored == {b: ReplicaLogCoverage(b, 1000 + b, 10 * b) for b in part.isr}
    r = _ap(h, topic, part.isr, version=4, coverage=cov)
    assert _code(r) == 0 and r.records == []          # same state again: nothing to write


def test_elect_preferred_leader():
    h, topic = _setup()
    part = topic.partitions[0]
    preferred = part.replicas[0]
    req = {"ElectionType": 0, "TopicPartitions": [{"Topic": "t", "Partitions": [0]}], "TimeoutMs": 100}
    r = h.call(43, 2, req)
    assert r.response["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"] == ErrorCode.ELECTION_NOT_NEEDED
    # the preferred leader goes away and comes back
    h.heartbeat(preferred, want_shutdown=True)
    assert h.qc.image.topics["t"].partitions[0].leader != preferred
    h.call(63, 1, {"BrokerId": preferred, "BrokerEpoch": h.epochs[preferred], "CurrentMetadataOffset": 0,
                   "WantFence": True, "WantShutDown": True})
    h.register(preferred, n=1)
    h.heartbeat(preferred)
    part = h.qc.image.topics["t"].partitions[0]
    _ap(h, topic, tuple(part.isr) + (preferred,))
    r = h.call(43, 2, req)
    assert r.response["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"] == 0
    assert h.qc.image.topics["t"].partitions[0].leader == preferred


def _manual(h, replicas):
    h.call(19, 7, {"Topics": [{"Name": "t", "NumPartitions": -1, "ReplicationFactor": -1, "Configs": [],
                               "Assignments": [{"PartitionIndex": 0, "BrokerIds": list(replicas)}]}],
                   "timeoutMs": 1, "validateOnly": False})
    return h.qc.image.topics["t"]


def test_elect_preferred_not_available_and_unclean_not_needed():
    h = Harness()
    h.start_brokers(2)
    _manual(h, [1, 2])
    h.heartbeat(1, want_shutdown=True)                # leadership moves to 2; 1 is not usable
    assert h.qc.image.topics["t"].partitions[0].leader == 2
    req = {"ElectionType": 0, "TopicPartitions": [{"Topic": "t", "Partitions": [0, 5]}], "TimeoutMs": 100}
    r = h.call(43, 2, req)
    codes = [x["ErrorCode"] for x in r.response["ReplicaElectionResults"][0]["PartitionResult"]]
    assert codes == [ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert r.records == []
    r = h.call(43, 2, {"ElectionType": 1, "TopicPartitions": [{"Topic": "t", "Partitions": [0]}], "TimeoutMs": 1})
    assert r.response["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"] == ErrorCode.ELECTION_NOT_NEEDED


def test_preferred_election_prefers_replicas_with_enough_local_log():
    h = Harness()
    h.start_brokers(3)
    h.call(44, 1, {"Resources": [{"ResourceType": 4, "ResourceName": "", "Configs": [
        {"Name": "leader.election.eligible.local.log.bytes", "ConfigOperation": 0, "Value": "1000"}]}],
        "ValidateOnly": False})
    topic = _manual(h, [1, 2, 3])
    assert topic.partitions[0].leader == 1
    # broker 1 bootstrapped from the tiered offset: a tiny local log; 2 and 3 hold plenty (KIP-1303)
    r = _ap(h, topic, (1, 2, 3), version=4, coverage={1: (h.now, 10), 2: (0, 5000), 3: (0, 5000)})
    assert _code(r) == 0
    r = h.call(43, 2, {"ElectionType": 0, "TopicPartitions": [{"Topic": "t", "Partitions": [0]}], "TimeoutMs": 1})
    assert r.response["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"] == 0
    assert h.qc.image.topics["t"].partitions[0].leader == 2
    # once broker 1 has enough local data, it is the preferred leader again
    _ap(h, topic, (2, 1, 3), version=4, coverage={1: (0, 2000)})
    r = h.call(43, 2, {"ElectionType": 0, "TopicPartitions": None, "TimeoutMs": 1})
    assert r.response["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"] == 0
    assert h.qc.image.topics["t"].partitions[0].leader == 1


def test_unclean_election_of_a_leaderless_partition():
    h, topic = _setup(n=2, rf=2)
    part = topic.partitions[0]
    follower = next(b for b in part.replicas if b != part.leader)
    _ap(h, topic, [part.leader])
    h.now = 9000
    h.heartbeat(follower)
    h.qc.tick(h.now)                                  # the leader is fenced: no valid leader left
    assert h.qc.image.topics["t"].partitions[0].leader == -1
    r = h.call(43, 2, {"ElectionType": 1, "TopicPartitions": [{"Topic": "t", "Partitions": [0]}], "TimeoutMs": 1})
    assert r.response["ReplicaElectionResults"][0]["PartitionResult"][0]["ErrorCode"] == 0
    now = h.qc.image.topics["t"].partitions[0]
    assert now.leader == follower and now.isr == (follower,) and now.leader_recovery_state == 1


def test_not_controller_when_standby():
    h = Harness()
    h.qc.on_leader_change(False, h.qc.committed_image)
    r = h.call(19, 7, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [],
                                   "Configs": []}], "timeoutMs": 1, "validateOnly": False})
    assert r.records == [] and r.response["Topics"][0]["ErrorCode"] == ErrorCode.NOT_CONTROLLER
    for key, version, req in [(62, 3, {}), (63, 1, {}), (56, 3, {}), (67, 0, {}), (64, 0, {})]:
        assert h.qc.handle(key, version, req, 0).response["ErrorCode"] == ErrorCode.NOT_CONTROLLER
    assert h.qc.tick(10_000) == [] and h.qc.next_deadline_ms() is None


def test_pending_image_discarded_on_leadership_loss():
    h = Harness()
    h.start_brokers(1)
    committed = h.qc.committed_image
    r = h.create_topic("t")                            # Harness commits at once ...
    r2 = h.call(19, 7, {"Topics": [{"Name": "u", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [],
                                    "Configs": []}], "timeoutMs": 1, "validateOnly": False}, commit=False)
    assert "u" in h.qc.image.topics and "u" not in h.qc.committed_image.topics
    assert r2.base_offset == r.last_offset + 1
    h.qc.on_commit(r.last_offset)                      # nothing new
    assert "u" not in h.qc.committed_image.topics
    h.qc.on_leader_change(False, h.qc.committed_image)
    assert "u" not in h.qc.image.topics and "t" in h.qc.image.topics
    h.qc.on_leader_change(True, h.qc.committed_image, next_offset=r.last_offset + 2)
    r3 = h.create_topic("u")
    assert r3.response["Topics"][0]["ErrorCode"] == 0 and r3.base_offset == r.last_offset + 2
    assert committed is not h.qc.committed_image


def test_standby_replays_the_log():
    leader = Harness()
    leader.start_brokers(2)
    leader.create_topic("t", partitions=2, rf=2)
    import random

    from tierlog.controller.controller_config import ControllerConfig
    from tierlog.controller.quorum_controller import QuorumController
    standby = QuorumController(3001, ControllerConfig(cluster_id="c1"), random.Random(1))
    # replay everything the leader wrote, in order
    for offset, rec in enumerate(leader.written):
        standby.replay(rec, offset)
    assert dict(standby.image.topics) == dict(leader.qc.image.topics)
    assert {b: (i.epoch, i.fenced) for b, i in standby.image.brokers.items()} == \
        {b: (i.epoch, i.fenced) for b, i in leader.qc.image.brokers.items()}
    assert standby.next_offset == leader.qc.next_offset


def test_idle_controller_writes_noop():
    h = Harness(max_idle_interval_ms=500)
    assert h.qc.next_deadline_ms() == 500
    assert h.qc.tick(499) == []
    records = h.qc.tick(500)
    assert len(records) == 1 and type(records[0]).__name__ == "NoOpRecord"


def _standby_image(h):
    import random

    from tierlog.controller.controller_config import ControllerConfig
    from tierlog.controller.quorum_controller import QuorumController
    from tierlog.metadata.cluster_records import decode, encode
    # a standby with NO static KIP-1303 default of its own: what it derives comes from the log
    standby = QuorumController(3001, ControllerConfig(cluster_id="c1"), random.Random(1))
    for offset, rec in enumerate(h.written):
        standby.replay(decode(encode(rec)), offset)
    return standby.image


def test_controlled_shutdown_election_reads_the_server_properties_default():
    # KIP-1303 set only in the controller's server.properties: the election derived from a
    # controlled shutdown must still skip the replica with a short local log, on every replica
    h = Harness(eligible_local_log_bytes=1000)
    h.start_brokers(3)
    topic = _manual(h, [1, 2, 3])
    assert _code(_ap(h, topic, (1, 2, 3), version=4, coverage={2: (0, 10), 3: (0, 5000)})) == 0
    r = h.heartbeat(1, want_shutdown=True)
    assert r.records[0].eligible_local_log_bytes == 1000       # the event carries the static default
    assert h.qc.image.topics["t"].partitions[0].leader == 3   # 2 holds only 10 bytes locally
    assert _standby_image(h).topics["t"].partitions[0].leader == 3


def test_fence_election_topic_override_wins():
    h = Harness(eligible_local_log_bytes=1000)
    h.start_brokers(3)
    topic = _manual(h, [1, 2, 3])
    # the topic turns eligibility off: assignment order again, the short replica 2 is elected
    h.call(44, 1, {"Resources": [{"ResourceType": 2, "ResourceName": "t", "Configs": [
        {"Name": "leader.election.eligible.local.log.bytes", "ConfigOperation": 0, "Value": "-1"}]}],
        "ValidateOnly": False})
    assert _code(_ap(h, topic, (1, 2, 3), version=4, coverage={2: (0, 10), 3: (0, 5000)})) == 0
    h.heartbeat(1, want_fence=True)
    assert h.qc.image.topics["t"].partitions[0].leader == 2
    assert _standby_image(h).topics["t"].partitions[0].leader == 2


def test_fence_election_cluster_dynamic_value_beats_static_default():
    h = Harness(eligible_local_log_bytes=-1)
    h.start_brokers(3)
    topic = _manual(h, [1, 2, 3])
    h.call(44, 1, {"Resources": [{"ResourceType": 4, "ResourceName": "", "Configs": [
        {"Name": "leader.election.eligible.local.log.bytes", "ConfigOperation": 0, "Value": "1000"}]}],
        "ValidateOnly": False})
    assert _code(_ap(h, topic, (1, 2, 3), version=4, coverage={2: (0, 10), 3: (0, 5000)})) == 0
    h.heartbeat(1, want_fence=True)
    assert h.qc.image.topics["t"].partitions[0].leader == 3
    assert _standby_image(h).topics["t"].partitions[0].leader == 3


def test_topic_override_is_validated():
    h = Harness()
    h.start_brokers(1)
    r = h.create_topic("bad", configs={"leader.election.eligible.local.log.ms": "-5"})
    assert r.response["Topics"][0]["ErrorCode"] == ErrorCode.INVALID_CONFIG
    r = h.create_topic("ok", configs={"leader.election.eligible.local.log.ms": "600000"})
    assert r.response["Topics"][0]["ErrorCode"] == 0


def test_cluster_wide_threshold_is_validated():
    h = Harness()
    h.start_brokers(1)
    r = h.call(44, 1, {"Resources": [{"ResourceType": 4, "ResourceName": "", "Configs": [
        {"Name": "leader.election.eligible.local.log.bytes", "ConfigOperation": 0, "Value": "lots"}]}],
        "ValidateOnly": False})
    assert r.response["Responses"][0]["ErrorCode"] == ErrorCode.INVALID_CONFIG and not r.records
