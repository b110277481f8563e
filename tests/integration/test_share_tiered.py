"""A share group reading a tiered topic (KIP-932 over KIP-405): the records acquired below the
leader's local log start are served from remote storage like any fetch, each delivered once."""
from __future__ import annotations

import pytest
from clients import create_topic, produce_all
from cluster import Cluster, running, wait_for
from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AdminClient
from test_share_consumer import alter_group
from tiered import TIERED_TOPIC, fs_props, tiered_state, wait_tiered

pytestmark = pytest.mark.integration
RECORDS = 3000


def test_a_share_group_reads_records_from_remote_storage(tmp_path):
    props = {**fs_props(tmp_path / "remote"), "share.coordinator.state.topic.replication.factor": "1",
             "share.coordinator.state.topic.min.isr": "1", "share.coordinator.state.topic.num.partitions": "1",
             "offsets.topic.num.partitions": "1", "group.share.heartbeat.interval.ms": "500",
             "group.share.min.heartbeat.interval.ms": "500"}
    with running(Cluster(tmp_path / "cluster", controllers=1, brokers=1, props=props)) as cluster:
        boot = cluster.bootstrap
        create_topic(boot, "cold", 1, TIERED_TOPIC)
        produce_all(boot, "cold", [(0, None, b"%05d" % i + b"x" * 1000, None, None) for i in range(RECORDS)])
        state = wait_tiered(cluster, "cold", 1, {0: RECORDS})[0]
        assert state["local_start"] > 0            # the first records are in remote storage only
        alter_group(AdminClient({"bootstrap.servers": boot}), "cold-readers", {"share.auto.offset.reset": "earliest"})
        c = ShareConsumer({"bootstrap.servers": boot, "group.id": "cold-readers"})
        c.subscribe(["cold"])
        seen: dict[int, int] = {}

        def all_read():
            for m in c.poll(0.5):
                assert m.error() is None, m.error()
                assert m.value()[:5] == b"%05d" % m.offset()
                seen[m.offset()] = seen.get(m.offset(), 0) + 1
            return len(seen) == RECORDS
        wait_for(all_read, 120, "every record of the tiered topic", interval_s=0)
        c.close()
        assert set(seen) == set(range(RECORDS)) and set(seen.values()) == {1}
        assert tiered_state(cluster, "cold", 0)["local_start"] > 0
