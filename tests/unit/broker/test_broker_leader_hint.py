"""KIP-951 "Broker": CurrentLeader from the partition state or else the metadata image, and
NodeEndpoints on the listener the request came in on (fenced leaders and leaders without
that listener are named but not listed, as Kafka's getAliveBrokerNode)."""
import types

from tierlog.broker.leader_hint import LeaderHints
from tierlog.metadata.cluster_records import BrokerEndpoint
from tierlog.metadata.image import BrokerInfo, PartitionInfo, TopicInfo


def _broker_info(node, fenced=False):
    eps = (BrokerEndpoint("PLAINTEXT", "outer", 9000 + node), BrokerEndpoint("INTERNAL", "inner", 8000 + node))
    return BrokerInfo(node, "outer", 9000 + node, "r1", fenced=fenced, endpoints=eps)


def _context(local=None):
    brokers = {n: _broker_info(n, fenced=(n == 5)) for n in (2, 3, 4, 5)}
    image = types.SimpleNamespace(brokers=brokers, topics={
        "t": TopicInfo("t", bytes(16), (PartitionInfo(0, 4, 7, (4, 3), (4, 3)),
                                        PartitionInfo(1, 5, 2, (5,), (5,))))})
    replicas = types.SimpleNamespace(get=lambda topic, index: local.get((topic, index)) if local else None)
    return types.SimpleNamespace(replicas=replicas, image=image, endpoint=lambda n: brokers.get(n))


def test_the_image_answers_when_no_replica_is_hosted_here():
    hints = LeaderHints(_context(), "INTERNAL")
    assert hints.current_leader("t", 0) == {"LeaderId": 4, "LeaderEpoch": 7}
    assert hints.current_leader("t", 9) == {"LeaderId": -1, "LeaderEpoch": -1}
    assert hints.current_leader("nope", 0) == {"LeaderId": -1, "LeaderEpoch": -1}
    assert hints.node_endpoints() == [{"NodeId": 4, "Host": "inner", "Port": 8004, "Rack": "r1"}]


def test_the_partition_state_wins_over_the_image():
    local = {("t", 0): types.SimpleNamespace(leader_id=3, leader_epoch=8)}
    hints = LeaderHints(_context(local), "PLAINTEXT")
    assert hints.current_leader("t", 0) == {"LeaderId": 3, "LeaderEpoch": 8}
    assert hints.node_endpoints() == [{"NodeId": 3, "Host": "outer", "Port": 9003, "Rack": "r1"}]


def test_a_fenced_leader_or_one_without_the_listener_is_named_but_not_listed():
    hints = LeaderHints(_context(), "PLAINTEXT")
    assert hints.current_leader("t", 1) == {"LeaderId": 5, "LeaderEpoch": 2}       # fenced
    assert hints.node_endpoints() == []
    hints = LeaderHints(_context(), "SSL")
    hints.current_leader("t", 0)
    assert hints.node_endpoints() == []
