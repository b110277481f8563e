"""Automatic leader balancing: the pure rule (leader_balance) and the controller's timer (tick)."""
from controller_helpers import Harness

from tierlog.controller.controller_config import ControllerConfig
from tierlog.controller.leader_balance import (
    BalanceSchedule,
    imbalance_ratios,
    partitions_to_balance,
    preferred_replica,
)
from tierlog.metadata.cluster_records import ReplicaLogCoverage
from tierlog.metadata.image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo
from tierlog.metadata.leader_election import DISABLED, EligibilityThresholds


def _image(partitions, fenced=(), shutting_down=(), brokers=(1, 2, 3)):
    """One topic "t"; ``partitions``: (replicas, leader, isr) per partition."""
    image = MetadataImage.empty("c1", brokers=[
        BrokerInfo(b, "h", 9000 + b, fenced=b in fenced, in_controlled_shutdown=b in shutting_down)
        for b in brokers])
    parts = tuple(PartitionInfo(i, leader, 1, tuple(replicas), tuple(isr))
                  for i, (replicas, leader, isr) in enumerate(partitions))
    return image.with_topic(TopicInfo("t", bytes([7] * 16), parts))


def _plan(image, percentage=10, thresholds=DISABLED, limit=1000):
    return partitions_to_balance(image, percentage, lambda t: thresholds, 0, limit)


def test_imbalance_ratio_per_preferred_broker():
    pairs = [(1, 1), (1, 2), (1, 2), (1, 1), (2, 2), (3, -1), (-1, -1)]
    assert imbalance_ratios(pairs) == {1: 0.5, 2: 0.0, 3: 1.0}


def test_preferred_replica_is_the_eligibility_sorted_first():
    part = PartitionInfo(0, 1, 1, (1, 2, 3), (1, 2, 3),
                         local_log=(ReplicaLogCoverage(1, 0, 10), ReplicaLogCoverage(2, 0, 5000)))
    assert preferred_replica(part, DISABLED, 0) == 1
    assert preferred_replica(part, EligibilityThresholds(-1, 1000), 0) == 2      # KIP-1303
    assert preferred_replica(PartitionInfo(0, -1, 0, (), ()), DISABLED, 0) == -1


def test_balances_partitions_of_brokers_over_the_percentage():
    # broker 1 is preferred for 2 partitions and leads neither (100%); broker 2 leads its one (0%)
    image = _image([((1, 2, 3), 2, (1, 2, 3)), ((1, 3, 2), 3, (1, 2, 3)), ((2, 1, 3), 2, (1, 2, 3))])
    assert _plan(image) == ({"t": [0, 1]}, False)


def test_percentage_is_a_strict_threshold():
    # broker 1 does not lead 1 of its 4 preferred partitions: 25%
    parts = [((1, 2, 3), 2, (1, 2, 3))] + [((1, 2, 3), 1, (1, 2, 3))] * 3
    assert _plan(_image(parts), percentage=25) == ({}, False)
    assert _plan(_image(parts), percentage=24) == ({"t": [0]}, False)
    assert _plan(_image(parts), percentage=0) == ({"t": [0]}, False)


def test_preferred_replica_must_be_in_isr_and_usable():
    parts = [((1, 2, 3), 2, (2, 3)),        # preferred out of the ISR
             ((1, 2, 3), 2, (1, 2, 3))]     # in the ISR
    assert _plan(_image(parts)) == ({"t": [1]}, False)
    assert _plan(_image(parts, fenced=(1,))) == ({}, False)
    assert _plan(_image(parts, shutting_down=(1,))) == ({}, False)


def test_partition_under_reassignment_is_left_alone():
    image = _image([((1, 2, 3), 2, (1, 2, 3))])
    part = image.topics["t"].partitions[0]
    moving = PartitionInfo(0, 2, 1, (1, 2, 3), (1, 2, 3), adding_replicas=(3,))
    assert part.leader == 2 and _plan(image) == ({"t": [0]}, False)
    image = image.with_topic(TopicInfo("t", bytes([7] * 16), (moving,)))
    assert _plan(image) == ({}, False)


def test_elections_per_check_are_bounded():
    parts = [((1, 2, 3), 2, (1, 2, 3))] * 5
    assert _plan(_image(parts), limit=3) == ({"t": [0, 1, 2]}, True)
    assert _plan(_image(parts), limit=5) == ({"t": [0, 1, 2, 3, 4]}, False)


def test_schedule():
    off = BalanceSchedule(False, 1000)
    off.start(0)
    assert off.next_ms is None and not off.due(10**9)
    on = BalanceSchedule(True, 1000)
    assert not on.due(0)
    on.start(500)
    assert not on.due(1499) and on.due(1500)
    on.checked(1500, truncated=False)
    assert on.next_ms == 2500
    on.checked(1600, truncated=True)
    assert on.next_ms == 1600
    on.stop()
    assert not on.due(10**9)


def test_config_keys():
    c = ControllerConfig.from_props({})
    assert (c.auto_leader_rebalance_enable, c.leader_imbalance_per_broker_percentage,
            c.leader_imbalance_check_interval_ms) == (True, 10, 300_000)
    c = ControllerConfig.from_props({"auto.leader.rebalance.enable": "false",
                                     "leader.imbalance.per.broker.percentage": "25",
                                     "leader.imbalance.check.interval.seconds": "2"})
    assert (c.auto_leader_rebalance_enable, c.leader_imbalance_per_broker_percentage,
            c.leader_imbalance_check_interval_ms) == (False, 25, 2000)
    try:
        ControllerConfig.from_props({"leader.imbalance.check.interval.seconds": "0"})
    except ValueError as e:
        assert "leader.imbalance.check.interval.seconds" in str(e)
    else:
        raise AssertionError("an interval of 0 was accepted")


# -- the controller: the check runs from tick() -----------------------------------------------------

def _harness(**config):
    h = Harness(**config)
    h.start_brokers(3)
    h.call(19, 7, {"Topics": [{"Name": "t", "NumPartitions": -1, "ReplicationFactor": -1, "Configs": [],
                               "Assignments": [{"PartitionIndex": i, "BrokerIds": r} for i, r in
                                               enumerate([[1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 3, 2]])]}],
                   "timeoutMs": 1, "validateOnly": False})
    return h


def _leaders(h):
    return [p.leader for p in h.qc.image.topics["t"].partitions]


def _move_leadership_off_broker_1(h):
    """Broker 1 shuts down (its leadership moves), comes back, and rejoins every ISR."""
    h.heartbeat(1, want_shutdown=True)
    assert 1 not in _leaders(h)
    h.call(63, 1, {"BrokerId": 1, "BrokerEpoch": h.epochs[1], "CurrentMetadataOffset": 0,
                   "WantFence": True, "WantShutDown": True})
    h.register(1, n=1)
    h.heartbeat(1)
    for p in h.qc.image.topics["t"].partitions:
        if 1 not in p.isr:
            members = [{"BrokerId": b, "BrokerEpoch": h.epochs[b]} for b in p.isr + (1,)]
            r = h.call(56, 3, {"BrokerId": p.leader, "BrokerEpoch": h.epochs[p.leader], "Topics": [
                {"TopicId": h.qc.image.topics["t"].topic_id, "Partitions": [
                    {"PartitionIndex": p.partition, "LeaderEpoch": p.leader_epoch, "NewIsrWithEpochs": members,
                     "LeaderRecoveryState": 0, "PartitionEpoch": p.partition_epoch}]}]})
            assert r.response["Topics"][0]["Partitions"][0]["ErrorCode"] == 0, r.response
    assert all(1 in p.isr for p in h.qc.image.topics["t"].partitions)


def _tick(h, now):
    h.now = now
    for b in (1, 2, 3):
        h.heartbeat(b)                      # keep every session alive
    records = h.qc.tick(now)
    if records:
        h.qc.on_commit(h.qc.next_offset - 1)
    return records


def test_controller_restores_preferred_leaders_at_the_check_interval():
    h = _harness(leader_imbalance_check_interval_ms=1000)
    assert _leaders(h) == [1, 2, 3, 1]
    assert _tick(h, 0) == []                               # starts the timer
    assert h.qc.next_deadline_ms() == 1000
    _move_leadership_off_broker_1(h)
    moved = _leaders(h)
    assert moved[0] != 1 and moved[3] != 1
    assert _tick(h, 999) == [] and _leaders(h) == moved
    records = _tick(h, 1000)
    assert len(records) == 2 and _leaders(h) == [1, 2, 3, 1]
    assert h.qc.next_deadline_ms() == 2000
    assert _tick(h, 2000) == []                            # balanced: nothing more to write


def test_controller_leaves_leaders_alone_when_disabled():
    h = _harness(leader_imbalance_check_interval_ms=1000, auto_leader_rebalance_enable=False)
    _tick(h, 0)
    assert h.qc.balance.next_ms is None and h.qc.next_deadline_ms() == 9000     # only the session timeout
    _move_leadership_off_broker_1(h)
    moved = _leaders(h)
    assert _tick(h, 5000) == [] and _leaders(h) == moved


def test_controller_timer_restarts_with_each_term():
    h = _harness(leader_imbalance_check_interval_ms=1000)
    _tick(h, 0)
    _move_leadership_off_broker_1(h)
    h.qc.on_leader_change(True, h.qc.committed_image)     # a new term at t=900
    assert _tick(h, 900) == [] and h.qc.next_deadline_ms() == 1900
    assert _tick(h, 1000) == [] and len(_tick(h, 1900)) == 2


def _report_coverage(h, coverage):
    """The leader of t-0 reports its ISR's local log coverage (AlterPartition v4, KIP-1303)."""
    p = h.qc.image.topics["t"].partitions[0]
    members = [{"BrokerId": b, "BrokerEpoch": h.epochs[b], "LocalLogStartTimestamp": coverage.get(b, (-1, -1))[0],
                "LocalLogSizeBytes": coverage.get(b, (-1, -1))[1]} for b in p.isr]
    r = h.call(56, 4, {"BrokerId": p.leader, "BrokerEpoch": h.epochs[p.leader], "Topics": [
        {"TopicId": h.qc.image.topics["t"].topic_id, "Partitions": [
            {"PartitionIndex": 0, "LeaderEpoch": p.leader_epoch, "NewIsrWithEpochs": members,
             "LeaderRecoveryState": 0, "PartitionEpoch": p.partition_epoch}]}]})
    assert r.response["Topics"][0]["Partitions"][0]["ErrorCode"] == 0, r.response


def test_balance_follows_kip_1303_eligibility():
    """KIP-1303's example: a replica with too little local log is not preferred; once it has enough,
    the auto leader rebalancer gives it leadership back."""
    h = _harness(leader_imbalance_check_interval_ms=1000)
    h.call(44, 1, {"Resources": [{"ResourceType": 4, "ResourceName": "", "Configs": [
        {"Name": "leader.election.eligible.local.log.bytes", "ConfigOperation": 0, "Value": "1000"}]}],
        "ValidateOnly": False})
    _tick(h, 0)
    assert _leaders(h)[0] == 1
    _report_coverage(h, {1: (0, 10), 2: (0, 5000), 3: (0, 5000)})    # broker 1 bootstrapped from tiered storage
    assert len(_tick(h, 1000)) == 1 and _leaders(h)[0] == 2
    _report_coverage(h, {1: (0, 2000)})                               # broker 1 has enough local log now
    assert _tick(h, 1500) == []                                       # not before the next check
    assert len(_tick(h, 2000)) == 1 and _leaders(h)[0] == 1
