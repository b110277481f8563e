"""A broker announces itself ready only once its own Metadata answers list it.

The controller answers a heartbeat "unfenced" when the record is committed; the
broker's image may apply it a moment later, and in that window a one-broker
cluster's Metadata listed no broker at all, so librdkafka's AdminClient waited
for a controller until its request timed out (a CI failure of
test_alter_configs).  Before the fix 6 of 15 fresh clusters showed the window.
The clusters start side by side, each in a thread that asks for Metadata the
moment its broker's ready line arrives, so the test costs about one start.
"""
from concurrent.futures import ThreadPoolExecutor

import pytest
from cluster import Cluster, running

pytestmark = pytest.mark.integration
STARTS = 5


def _listed_right_after_ready(cluster: Cluster) -> list[int]:
    with running(cluster) as c:
        return [b["NodeId"] for b in c.metadata(c.brokers[0])["Brokers"]]


def test_a_ready_broker_is_in_its_own_metadata(tmp_path):
    clusters = [Cluster(tmp_path / f"c{i}", controllers=1, brokers=1) for i in range(STARTS)]
    with ThreadPoolExecutor(STARTS) as pool:
        listed = list(pool.map(_listed_right_after_ready, clusters))
    assert listed == [[c.brokers[0].node_id] for c in clusters]
