import random
from collections import Counter

import pytest

from tierlog.controller.placement import (
    PlacementError,
    UsableBroker,
    place,
    validate_assignment,
)
from tierlog.protocol.errors import ErrorCode


def _brokers(n, racks=None):
    return [UsableBroker(i, None if racks is None else f"r{i % racks}") for i in range(n)]


def test_leaders_spread_evenly_over_brokers():
    placement = place(_brokers(6, racks=3), 1000, 3, random.Random(1))
    leaders = Counter(r[0] for r in placement)
    assert set(leaders) == set(range(6))
    assert max(leaders.values()) - min(leaders.values()) <= 1


def test_replicas_on_distinct_racks_and_brokers():
    brokers = _brokers(9, racks=3)
    rack = {b.node_id: b.rack for b in brokers}
    placement = place(brokers, 1000, 3, random.Random(2))
    for replicas in placement:
        assert len(set(replicas)) == 3
        assert len({rack[r] for r in replicas}) == 3
    per_broker = Counter(r for rs in placement for r in rs)
    assert max(per_broker.values()) - min(per_broker.values()) <= 2


def test_more_replicas_than_racks_uses_every_rack_then_fills():
    brokers = _brokers(6, racks=2)
    rack = {b.node_id: b.rack for b in brokers}
    for replicas in place(brokers, 200, 3, random.Random(3)):
        assert len(set(replicas)) == 3
        assert {rack[r] for r in replicas} == {"r0", "r1"}


def test_uneven_racks_still_distinct_racks():
    brokers = [UsableBroker(0, "a"), UsableBroker(1, "a"), UsableBroker(2, "a"), UsableBroker(3, "b"),
               UsableBroker(4, "c")]
    rack = {b.node_id: b.rack for b in brokers}
    placement = place(brokers, 500, 3, random.Random(4))
    for replicas in placement:
        assert {rack[r] for r in replicas} == {"a", "b", "c"}
    leaders = Counter(r[0] for r in placement)
    assert max(leaders.values()) - min(leaders.values()) <= 1


def test_followers_vary_across_rotations():
    placement = place(_brokers(5), 100, 2, random.Random(5))
    pairs = {r for r in placement}
    assert len(pairs) > 5


def test_deterministic_given_seed():
    assert place(_brokers(7, 2), 50, 3, random.Random(9)) == place(_brokers(7, 2), 50, 3, random.Random(9))


def test_replication_factor_larger_than_brokers():
    with pytest.raises(PlacementError) as e:
        place(_brokers(2), 1, 3, random.Random(0))
    assert e.value.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    with pytest.raises(PlacementError) as e:
        place([], 1, 1, random.Random(0))
    assert e.value.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize("assignment", [
    [{"PartitionIndex": 0, "BrokerIds": [1, 1]}],
    [{"PartitionIndex": 0, "BrokerIds": [1, 9]}],
    [{"PartitionIndex": 0, "BrokerIds": []}],
    [{"PartitionIndex": 0, "BrokerIds": [1]}, {"PartitionIndex": 0, "BrokerIds": [2]}],
    [{"PartitionIndex": 1, "BrokerIds": [1]}],
    [{"PartitionIndex": 0, "BrokerIds": [1]}, {"PartitionIndex": 1, "BrokerIds": [1, 2]}],
])
def test_bad_manual_assignments(assignment):
    with pytest.raises(PlacementError) as e:
        validate_assignment(assignment, {1, 2, 3})
    assert e.value.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_good_manual_assignment():
    got = validate_assignment([{"PartitionIndex": 1, "BrokerIds": [2, 3]},
                               {"PartitionIndex": 0, "BrokerIds": [3, 1]}], {1, 2, 3})
    assert got == {0: (3, 1), 1: (2, 3)}
