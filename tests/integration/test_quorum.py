"""The metadata quorum in real processes: 3 controllers + 3 brokers.

Issue 3 item 5: election after kill -9 of the active controller with no
committed metadata lost, a wiped controller rejoining through FetchSnapshot,
and a broker that was down catching up and being unfenced.
"""
import json
import shutil

import pytest
from clients import consume_all, create_topic, produce_all
from cluster import Cluster, wait_for

FAST = {"controller.quorum.election.timeout.ms": "500", "controller.quorum.fetch.timeout.ms": "1000",
        "broker.heartbeat.interval.ms": "300", "broker.session.timeout.ms": "2000"}


pytestmark = pytest.mark.cluster(controllers=3, brokers=3, props=FAST)


def _topics(cluster, broker) -> set[str]:
    return {t["Name"] for t in cluster.metadata(broker)["Topics"]}


def _brokers(cluster, broker) -> set[int]:
    return {b["NodeId"] for b in cluster.metadata(broker)["Brokers"]}


def test_clients_round_trip_through_the_cluster(cluster):
    cluster.wait_leader()
    create_topic(cluster.bootstrap, "spread", 6)
    wait_for(lambda: all("spread" in _topics(cluster, b) for b in cluster.brokers), 10, "topic on every broker")
    leaders = {p["LeaderId"] for t in cluster.metadata(cluster.brokers[0], ["spread"])["Topics"]
               for p in t["Partitions"]}
    assert leaders == {b.node_id for b in cluster.brokers}, "placement spreads leaders over the brokers"
    produce_all(cluster.bootstrap, "spread", [(i % 6, str(i).encode(), b"v" * 100, None, None)
                                              for i in range(6000)])
    assert len(consume_all(cluster.bootstrap, "spread", 6, 6000)) == 6000


def test_kill9_of_active_controller_elects_another_and_loses_nothing(cluster):
    first = cluster.wait_leader()
    for i in range(5):
        create_topic(cluster.bootstrap, f"before-{i}", 1)
    cluster.controller(first).kill9()
    second = cluster.wait_leader(timeout_s=10, not_id=first)
    assert second != first
    create_topic(cluster.bootstrap, "after", 1)
    want = {f"before-{i}" for i in range(5)} | {"after"}
    wait_for(lambda: want <= _topics(cluster, cluster.brokers[0]), 10, "every topic listed")
    cluster.controller(first).start()
    wait_for(lambda: _caught_up(cluster, first), 20, f"controller {first} caught up")


def _caught_up(cluster, node_id) -> bool:
    part = cluster.quorum()
    hw = part["HighWatermark"]
    return any(v["ReplicaId"] == node_id and v["LogEndOffset"] >= hw for v in part["CurrentVoters"])


def test_wiped_controller_rejoins_through_fetch_snapshot(tmp_path):
    props = {**FAST, "metadata.log.max.record.bytes.between.snapshots": "2048",
             "metadata.log.segment.bytes": "4096", "metadata.max.retention.bytes": "0",
             "metadata.max.retention.ms": "0"}
    cluster = Cluster(tmp_path, 3, 1, props).start()
    try:
        leader = cluster.wait_leader()
        for i in range(40):
            create_topic(cluster.bootstrap, f"t-{i}", 1)
        victim = next(c for c in cluster.controllers if c.node_id != leader)
        wait_for(lambda: _log_start(cluster.controller(leader)) > 0, 20, "the leader's log start past a snapshot")
        victim.stop()
        shutil.rmtree(victim.data_dir)
        # The restarted voter never snapshots on its own, so a checkpoint in its directory can only be
        # one it fetched (a replay from offset 0 would leave none).
        victim.props["metadata.log.max.record.bytes.between.snapshots"] = str(1 << 40)
        victim.start()
        # Not _caught_up alone: until the wiped voter's first valid Fetch the leader still reports the
        # log end it had before the wipe (Kafka does the same), so when nothing committed while it was
        # away it looks caught up before it fetched anything. Its own directory tells the truth.
        wait_for(lambda: list(_metadata_dir(victim).glob("*.checkpoint")) and _log_start(victim) > 0,
                 30, "the wiped voter loaded a fetched snapshot and started its log there")
        wait_for(lambda: _caught_up(cluster, victim.node_id), 30, "wiped controller caught up")
        assert "t-0" in _topics(cluster, cluster.brokers[0])
    finally:
        cluster.stop()


def _log_start(node) -> int:
    path = _metadata_dir(node) / "raft-log-start"
    return json.loads(path.read_text())["offset"] if path.exists() else 0


def _metadata_dir(node):
    return node.data_dir / "__cluster_metadata-0"


def test_broker_down_comes_back_catches_up_and_is_unfenced(cluster):
    cluster.wait_leader()
    down, other = cluster.brokers[0], cluster.brokers[1]
    wait_for(lambda: down.node_id in _brokers(cluster, other), 10, "every broker unfenced")
    down.stop()
    wait_for(lambda: down.node_id not in _brokers(cluster, other), 10, "the stopped broker fenced")
    create_topic(other.bootstrap, "while-down", 3)
    down.start()        # returns once the broker is registered, caught up and unfenced
    assert "while-down" in _topics(cluster, down)
    wait_for(lambda: down.node_id in _brokers(cluster, other), 10, "the broker unfenced again")
