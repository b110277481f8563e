"""Consumer groups (classic protocol) over sockets: real node processes, real clients. The tests
kill no node: they share one cluster (``shared_cluster``), each with a topic and groups of its own."""
from __future__ import annotations

import time

import pytest
from clients import create_topic, first_offsets, poll_records, produce_all
from cluster import FAST_REPLICATION, request, wait_for
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

pytestmark = [pytest.mark.integration,
              pytest.mark.cluster(props={**FAST_REPLICATION, "group.initial.rebalance.delay.ms": "100",
                                         "offsets.topic.num.partitions": "6",
                                         "group.min.session.timeout.ms": "1000"})]
TOPIC, PARTITIONS = "events", 6


def consumer(bootstrap: str, group: str, topic: str = TOPIC, **conf) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, **conf})
    c.subscribe([topic])
    return c


def poll_until(consumers, predicate, what: str, timeout_s: float = 60) -> None:
    """Keep every consumer polling (they heartbeat and rebalance only when polled) until ``predicate``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        if predicate():
            return
    raise AssertionError(f"timed out waiting for {what}: {[sorted(p.partition for p in c.assignment()) for c in consumers]}")


def split_evenly(consumers) -> bool:
    parts = [sorted(p.partition for p in c.assignment()) for c in consumers]
    flat = sorted(p for ps in parts for p in ps)
    return flat == list(range(PARTITIONS)) and max(map(len, parts)) - min(map(len, parts)) <= 1


def test_members_split_partitions_and_rebalance_on_join_and_leave(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-split"
    create_topic(boot, topic, PARTITIONS)
    a, b = consumer(boot, "g1", topic), consumer(boot, "g1", topic)
    poll_until([a, b], lambda: split_evenly([a, b]) and all(len(c.assignment()) == 3 for c in (a, b)),
               "two members with 3 partitions each")
    c = consumer(boot, "g1", topic)
    poll_until([a, b, c], lambda: split_evenly([a, b, c]) and all(len(x.assignment()) == 2 for x in (a, b, c)),
               "three members with 2 partitions each")
    c.close()
    poll_until([a, b], lambda: split_evenly([a, b]) and all(len(x.assignment()) == 3 for x in (a, b)),
               "the partitions of the member that left redistributed")
    admin = AdminClient({"bootstrap.servers": boot})
    listed = admin.list_consumer_groups().result(timeout=30)
    assert "g1" in [g.group_id for g in listed.valid]
    desc = admin.describe_consumer_groups(["g1"])["g1"].result(timeout=30)
    assert len(desc.members) == 2 and str(desc.state).endswith("STABLE")
    assert {m.host for m in desc.members} == {"/127.0.0.1"}      # the client address, as Kafka shows it
    a.close()
    b.close()


def test_commits_survive_restart_and_consumer_resumes_after_them(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-commits"
    create_topic(boot, topic, PARTITIONS)
    produce_all(boot, topic, [(i % PARTITIONS, None, b"v%d" % i, None, None) for i in range(60)])
    c = consumer(boot, "g2", topic)
    committed = {m.partition(): m.offset() + 1 for m in poll_records(c, 30)}
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in committed.items()], asynchronous=False)
    c.close()
    c = consumer(boot, "g2", topic)
    unread = [p for p in range(PARTITIONS) if committed.get(p, 0) < 10]     # 10 records per partition
    firsts = first_offsets(c, len(unread))          # a fully read partition sends nothing more
    assert sorted(firsts) == unread
    for p, off in committed.items():
        if p in firsts:
            assert firsts[p] == off, (p, firsts[p], off)
    c.close()
    admin = AdminClient({"bootstrap.servers": boot})
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g2")])["g2"].result(timeout=30)
    assert {tp.partition: tp.offset for tp in offsets.topic_partitions if tp.offset >= 0} == committed
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        "g2", [TopicPartition(topic, 0, 3)])])["g2"].result(timeout=30)
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
        "g2", [TopicPartition(topic, 0)])])["g2"].result(timeout=30)
    assert offsets.topic_partitions[0].offset == 3
    admin.delete_consumer_groups(["g2"])["g2"].result(timeout=30)
    listed = admin.list_consumer_groups().result(timeout=30)
    assert "g2" not in [g.group_id for g in listed.valid]


def test_group_apis_on_the_wire(shared_cluster):
    """FindCoordinator v4 batches, NOT_COORDINATOR elsewhere, the two-step join, errors, admin APIs."""
    cluster, groups = shared_cluster, ["wire-a", "wire-b"]

    def find_all():
        b = cluster.brokers[0]
        resp = request("127.0.0.1", b.port, ApiKey.FIND_COORDINATOR, {"KeyType": 0, "CoordinatorKeys": groups}, 4)
        return resp["Coordinators"] if all(c["ErrorCode"] == 0 for c in resp["Coordinators"]) else None
    found = wait_for(find_all, 60, "coordinators")
    assert [c["Key"] for c in found] == groups
    port = {b.node_id: b.port for b in cluster.brokers}
    coord, other = found[0]["NodeId"], next(b.node_id for b in cluster.brokers if b.node_id != found[0]["NodeId"])
    join = {"GroupId": "wire-a", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": "",
            "GroupInstanceId": None, "ProtocolType": "consumer", "Protocols": [{"Name": "range", "Metadata": b""}]}
    assert request("127.0.0.1", port[other], ApiKey.JOIN_GROUP, join, 5)["ErrorCode"] == ErrorCode.NOT_COORDINATOR
    assert request("127.0.0.1", port[coord], ApiKey.JOIN_GROUP, {**join, "GroupId": ""}, 5)[
        "ErrorCode"] == ErrorCode.INVALID_GROUP_ID
    retriable = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)   # until it has loaded

    def bad_session():
        code = request("127.0.0.1", port[coord], ApiKey.JOIN_GROUP, {**join, "SessionTimeoutMs": 10}, 5)["ErrorCode"]
        return None if code in retriable else code
    assert wait_for(bad_session, 60, "the coordinator loaded") == ErrorCode.INVALID_SESSION_TIMEOUT
    first = request("127.0.0.1", port[coord], ApiKey.JOIN_GROUP, join, 5)
    assert first["ErrorCode"] == ErrorCode.MEMBER_ID_REQUIRED and first["MemberId"]
    joined = request("127.0.0.1", port[coord], ApiKey.JOIN_GROUP, {**join, "MemberId": first["MemberId"]}, 5,
                     timeout_s=30)
    assert joined["ErrorCode"] == 0 and joined["GenerationId"] == 1 and joined["Leader"] == first["MemberId"]
    member = first["MemberId"]
    synced = request("127.0.0.1", port[coord], ApiKey.SYNC_GROUP, {
        "GroupId": "wire-a", "GenerationId": 1, "MemberId": member,
        "Assignments": [{"MemberId": member, "Assignment": b"mine"}]}, 3)
    assert synced["ErrorCode"] == 0 and synced["Assignment"] == b"mine"
    hb = {"GroupId": "wire-a", "GenerationId": 0, "MemberId": member}
    assert request("127.0.0.1", port[coord], ApiKey.HEARTBEAT, hb, 3)["ErrorCode"] == ErrorCode.ILLEGAL_GENERATION
    listed = request("127.0.0.1", port[coord], ApiKey.LIST_GROUPS, {"StatesFilter": ["stable"]}, 4)
    assert [g["GroupId"] for g in listed["Groups"] if g["GroupId"].startswith("wire-")] == ["wire-a"]
    deleted = request("127.0.0.1", port[coord], ApiKey.DELETE_GROUPS, {"GroupsNames": ["wire-a"]}, 2)
    assert deleted["Results"][0]["ErrorCode"] == ErrorCode.NON_EMPTY_GROUP
    left = request("127.0.0.1", port[coord], ApiKey.LEAVE_GROUP, {"GroupId": "wire-a", "Members": [
        {"MemberId": member, "GroupInstanceId": None}]}, 3)
    assert left["ErrorCode"] == 0 and left["Members"][0]["ErrorCode"] == 0
    create_topic(cluster.bootstrap, "wire-t")     # offsets of unknown topics are refused (UNKNOWN_TOPIC_OR_PARTITION)
    commit = request("127.0.0.1", port[coord], ApiKey.OFFSET_COMMIT, {
        "GroupId": "wire-a", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "Topics": [
            {"Name": "wire-t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 7, "CommittedMetadata": "m"}]}]}, 8)
    assert commit["Topics"][0]["Partitions"][0]["ErrorCode"] == 0
    fetched = request("127.0.0.1", port[coord], ApiKey.OFFSET_FETCH, {"Groups": [
        {"GroupId": "wire-a", "Topics": None}], "RequireStable": False}, 8)
    assert fetched["Groups"][0]["Topics"][0]["Partitions"][0]["CommittedOffset"] == 7
    gone = request("127.0.0.1", port[coord], ApiKey.OFFSET_DELETE, {"GroupId": "wire-a", "Topics": [
        {"Name": "wire-t", "Partitions": [{"PartitionIndex": 0}]}]}, 0)
    assert gone["ErrorCode"] == 0 and gone["Topics"][0]["Partitions"][0]["ErrorCode"] == 0
    deleted = request("127.0.0.1", port[coord], ApiKey.DELETE_GROUPS, {"GroupsNames": ["wire-a", "nope"]}, 2)
    assert [r["ErrorCode"] for r in deleted["Results"]] == [0, ErrorCode.GROUP_ID_NOT_FOUND]
    meta = request("127.0.0.1", port[coord], ApiKey.METADATA, {"Topics": [{"Name": "__consumer_offsets"}]}, 12)
    assert meta["Topics"][0]["IsInternal"] is True


SESSION_MS, EXPIRY_SLACK_S = 5000, 1.0      # librdkafka's test 0081: static members, DeleteGroups 6 s after close


def test_static_members_expire_at_their_session_timeout_so_their_groups_can_be_deleted(shared_cluster):
    """A static member's close sends no LeaveGroup: the coordinator removes it when its session
    times out (a timer at that deadline), so DeleteGroups succeeds right after the timeout."""
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-static"
    create_topic(boot, topic, PARTITIONS)
    produce_all(boot, topic, [(p, None, b"v", None, None) for p in range(PARTITIONS)])
    groups = [f"static-{i}" for i in range(3)]
    members = [consumer(boot, g, topic, **{"group.instance.id": f"{g}-0", "session.timeout.ms": SESSION_MS,
                                     "heartbeat.interval.ms": 3000, "enable.auto.commit": True}) for g in groups]
    for c in members:
        poll_records(c, PARTITIONS)
    admin = AdminClient({"bootstrap.servers": boot})
    described = {g: f.result(timeout=30) for g, f in admin.describe_consumer_groups(groups).items()}
    assert [len(d.members) for d in described.values()] == [1, 1, 1]
    for c in members:
        c.close()
    deadline = time.monotonic() + SESSION_MS / 1000 + EXPIRY_SLACK_S     # the last close + timeout + slack
    left = list(groups)
    while left:
        for g, f in admin.delete_consumer_groups(left, request_timeout=10).items():
            try:
                f.result()
                left.remove(g)
            except KafkaException as e:
                assert e.args[0].code() == KafkaError.NON_EMPTY_GROUP, e
        assert not left or time.monotonic() < deadline, f"{left} still held {SESSION_MS} ms after their member closed"
        time.sleep(0.1)
