"""A broker announces itself ready only once its own Metadata answers list it.

The controller answers a heartbeat "unfenced" when the record is committed; the
broker's image may apply it a moment later, and in that window a one-broker
cluster's Metadata listed no broker at all, so librdkafka's AdminClient waited
for a controller until its request timed out (a CI failure of
test_alter_configs).  Before the fix 6 of 15 fresh clusters showed the window.
"""
import pytest
from cluster import Cluster, running

pytestmark = pytest.mark.integration
STARTS = 5


def test_a_ready_broker_is_in_its_own_metadata(tmp_path):
    missing = []
    for i in range(STARTS):
        with running(Cluster(tmp_path / f"c{i}", controllers=1, brokers=1)) as c:
            broker = c.brokers[0]
            listed = [b["NodeId"] for b in c.metadata(broker)["Brokers"]]
            if listed != [broker.node_id]:
                missing.append((i, listed))
    assert missing == []
