"""DescribeTopicPartitions (75, KIP-966) over a socket, from kafka-python and `tierlog topics describe`.

1. One node: kafka-python's describe_topic_partitions pages through every
   partition with a small ResponsePartitionLimit by following NextCursor, and
   an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION, a cursor on a topic
   not asked for INVALID_REQUEST.
2. 1 controller + 3 brokers, RF 3, min.insync.replicas=2: the leader is killed
   (a new leader, a higher leader epoch), then one of the two followers left
   (the ISR falls below min ISR, so that follower becomes the ELR). kafka-python
   and the CLI (JSON and table) both show the leader, its epoch, ISR and ELR.
3. A reassignment stuck on a fenced broker: the CLI shows its adding replica
   (from ListPartitionReassignments) and counts the replication factor without it.
"""
import json
import os
import subprocess
import sys

import pytest
from cluster import FAST_REPLICATION, Cluster, wait_for
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaConnectionError

pytestmark = pytest.mark.integration

UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST = 3, 42
RUN_TIMEOUT_S = 90


def _admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)


def _tierlog(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TIERLOG_BOOTSTRAP"}
    result = subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args], check=False, capture_output=True,
                            text=True, timeout=RUN_TIMEOUT_S, env=env)
    assert result.returncode == 0, result.stderr
    return result


def _pages(admin, topics, limit) -> list[list[tuple[str, int]]]:
    pages, cursor = [], None
    for _ in range(50):
        answer = admin.describe_topic_partitions(topics, response_partition_limit=limit, cursor=cursor)
        pages.append([(t["name"], p["partition_index"]) for t in answer["topics"] for p in t["partitions"]])
        cursor = answer["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError(f"still paging after 50 pages: {pages[-3:]}")


def test_kafka_python_pages_through_every_partition(node):
    admin = _admin(node.bootstrap)
    try:
        admin.create_topics([NewTopic("pages-b", 3, 1), NewTopic("pages-a", 2, 1)])
        wait_for(lambda: all(not t["error_code"] for t in admin.describe_topic_partitions(
            ["pages-a", "pages-b"])["topics"]), 30, "both topics described")
        assert _pages(admin, ["pages-b", "pages-a"], 2) == [
            [("pages-a", 0), ("pages-a", 1)], [("pages-b", 0), ("pages-b", 1)], [("pages-b", 2)]]
        assert _pages(admin, [], 4) == [[("pages-a", 0), ("pages-a", 1), ("pages-b", 0), ("pages-b", 1)],
                                        [("pages-b", 2)]]
        answer = admin.describe_topic_partitions(["pages-a", "no-such-topic"])
        assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [
            ("no-such-topic", UNKNOWN_TOPIC_OR_PARTITION), ("pages-a", 0)]
        bad = admin.describe_topic_partitions(["pages-a"], cursor={"topic_name": "pages-b", "partition_index": 0})
        assert [(t["name"], t["error_code"]) for t in bad["topics"]] == [("pages-a", INVALID_REQUEST)]
        [part] = admin.describe_topic_partitions(["pages-b"], 1, {"topic_name": "pages-b", "partition_index": 2}
                                                 )["topics"][0]["partitions"]
        assert (part["partition_index"], part["leader_id"], part["leader_epoch"]) == (2, 1, 0)
    finally:
        admin.close()


def _partition(cluster, broker, topic) -> dict | None:
    ps = cluster.partitions(broker, topic)
    return ps[0] if ps else None


def _cli_table_row(text: str) -> dict:
    """The header and the one partition row of `topics describe`'s table (tab-separated in a pipe, after
    the topic's summary line), as a dict."""
    lines = [line.split("\t") for line in text.splitlines() if "\t" in line]
    [at] = [i for i, fields in enumerate(lines) if fields[0] == "Partition"]
    header, row = lines[at:]
    return dict(zip(header, row, strict=True))


def test_elr_and_leader_epoch_after_the_isr_falls_below_min_isr(cluster):
    topic = "elr"
    cluster.wait_leader()
    first = cluster.brokers[0]
    admin = _admin(first.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 3, topic_configs={"min.insync.replicas": "2"})])
    finally:
        admin.close()
    start = wait_for(lambda: (p := _partition(cluster, first, topic)) and len(p["IsrNodes"]) == 3 and p,
                     60, "the topic with a full ISR")
    old_leader = start["LeaderId"]
    cluster.broker(old_leader).kill9()
    survivors = [b for b in cluster.brokers if b.alive()]
    moved = wait_for(lambda: (p := _partition(cluster, survivors[0], topic))
                     and p["LeaderId"] not in (old_leader, -1) and old_leader not in p["IsrNodes"] and p,
                     60, f"a new leader without broker {old_leader}")
    leader = cluster.broker(moved["LeaderId"])
    follower = next(b for b in survivors if b is not leader)
    follower.kill9()

    def elr_shown():
        admin = _admin(leader.bootstrap)
        try:       # until the killed broker is fenced, metadata may still send the client to it
            [t] = admin.describe_topic_partitions([topic])["topics"]
        except KafkaConnectionError:
            return None
        finally:
            admin.close()
        p = t["partitions"][0]
        return p["isr_nodes"] == [leader.node_id] and p["eligible_leader_replicas"] == [follower.node_id] and p
    part = wait_for(elr_shown, 60, f"ISR [{leader.node_id}] and ELR [{follower.node_id}]", interval_s=0.5)
    final = _partition(cluster, leader, topic)
    assert part["leader_id"] == leader.node_id
    assert part["leader_epoch"] == final["LeaderEpoch"] > start["LeaderEpoch"]
    assert sorted(part["replica_nodes"]) == sorted(b.node_id for b in cluster.brokers)
    assert sorted(part["offline_replicas"]) == sorted([old_leader, follower.node_id])

    b = ["--bootstrap-server", leader.bootstrap]
    [described] = json.loads(_tierlog("topics", "describe", topic, "--json", *b).stdout)
    [p] = described["partitions"]
    assert (p["leader"], p["leader_epoch"], p["isr"], p["elr"]) == (
        leader.node_id, part["leader_epoch"], [leader.node_id], [follower.node_id])
    assert p["replicas"] == part["replica_nodes"]
    row = _cli_table_row(_tierlog("topics", "describe", topic, *b).stdout)
    assert (row["Leader"], row["LeaderEpoch"], row["Isr"], row["Elr"]) == (
        str(leader.node_id), str(part["leader_epoch"]), str(leader.node_id), str(follower.node_id))


def test_a_stuck_reassignment_shows_its_adding_replica(tmp_path):
    cluster = Cluster(tmp_path, 1, 2, FAST_REPLICATION).start()
    try:
        cluster.wait_leader()
        up, down = cluster.brokers
        admin = _admin(up.bootstrap)
        try:
            admin.create_topics([NewTopic("moving", replica_assignments={0: [up.node_id]})])
        finally:
            admin.close()
        wait_for(lambda: (p := _partition(cluster, up, "moving")) and p["LeaderId"] == up.node_id,
                 30, "the topic led by the first broker")
        down.stop()                         # registered but fenced: the reassignment cannot finish
        wait_for(lambda: down.node_id not in [b["NodeId"] for b in cluster.metadata(up)["Brokers"]],
                 30, f"broker {down.node_id} fenced")
        target = [up.node_id, down.node_id]
        admin = _admin(up.bootstrap)        # a client that knows only the live broker
        try:
            assert admin.alter_partition_reassignments({TopicPartition("moving", 0): target}) == {
                TopicPartition("moving", 0): None}
        finally:
            admin.close()
        b = ["--bootstrap-server", up.bootstrap]

        def described():    # the broker's image may trail the controller's answer by a moment
            [p] = json.loads(_tierlog("topics", "describe", "moving", "--json", *b).stdout)[0]["partitions"]
            return len(p["replicas"]) == 2 and p
        p = wait_for(described, 30, "the new replica in the broker's image")
        assert (p["adding"], p["removing"], p["offline"]) == ([down.node_id], [], [down.node_id])
        assert sorted(p["replicas"]) == sorted(target)
        text = _tierlog("topics", "describe", "moving", *b).stdout
        assert "ReplicationFactor: 1" in text
        row = _cli_table_row(text)
        assert (row["Adding"], "Removing" in row) == (str(down.node_id), False)
    finally:
        cluster.stop()
