"""KIP-848 consumer groups over sockets: confluent-kafka with group.protocol=consumer
(ConsumerGroupHeartbeat, server-side assignment) against real node processes. The tests that kill
no node share one cluster (``shared_cluster``), each with a topic and groups of its own."""
from __future__ import annotations

import pytest
from clients import create_topic, first_offsets, poll_records, produce_all
from cluster import FAST_REPLICATION, request, wait_for
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewPartitions
from test_consumer_group_faults import coordinator_of
from test_consumer_groups import PARTITIONS, TOPIC, poll_until, split_evenly
from test_consumer_groups import consumer as classic_consumer

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

pytestmark = [pytest.mark.integration,
              pytest.mark.cluster(props={**FAST_REPLICATION, "group.initial.rebalance.delay.ms": "100",
                                         "offsets.topic.num.partitions": "6",
                                         "group.consumer.heartbeat.interval.ms": "500",
                                         "group.consumer.min.heartbeat.interval.ms": "500",
                                         "group.consumer.session.timeout.ms": "10000",
                                         "group.consumer.min.session.timeout.ms": "6000"})]


def consumer(bootstrap: str, group: str, topic: str = TOPIC, **conf) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, **conf})
    c.subscribe([topic])
    return c


def sizes(consumers) -> list[int]:
    return sorted(len(c.assignment()) for c in consumers)


def test_members_split_partitions_and_rebalance_on_join_and_leave(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-split"
    create_topic(boot, topic, PARTITIONS)
    a, b = consumer(boot, "k1", topic), consumer(boot, "k1", topic)
    poll_until([a, b], lambda: split_evenly([a, b]) and sizes([a, b]) == [3, 3], "two members with 3 each")
    c = consumer(boot, "k1", topic)
    poll_until([a, b, c], lambda: split_evenly([a, b, c]) and sizes([a, b, c]) == [2, 2, 2], "three with 2 each")
    c.close()
    poll_until([a, b], lambda: split_evenly([a, b]) and sizes([a, b]) == [3, 3], "the leaver's partitions moved")
    admin = AdminClient({"bootstrap.servers": boot})
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(timeout=30).valid}
    assert listed["k1"].type == ConsumerGroupType.CONSUMER
    desc = admin.describe_consumer_groups(["k1"])["k1"].result(timeout=30)
    assert len(desc.members) == 2 and str(desc.state).endswith("STABLE")
    assert {m.host for m in desc.members} == {"/127.0.0.1"}
    assert desc.type == ConsumerGroupType.CONSUMER and desc.partition_assignor == "uniform"
    assert sorted(len(m.assignment.topic_partitions) for m in desc.members) == [3, 3]
    a.close()
    b.close()


def test_commits_survive_a_restart_and_the_consumer_resumes_after_them(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-commits"
    create_topic(boot, topic, PARTITIONS)
    produce_all(boot, topic, [(i % PARTITIONS, None, b"v%d" % i, None, None) for i in range(60)])
    c = consumer(boot, "k2", topic)
    committed = {m.partition(): m.offset() + 1 for m in poll_records(c, 30)}
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in committed.items()], asynchronous=False)
    c.close()
    c = consumer(boot, "k2", topic)
    unread = [p for p in range(PARTITIONS) if committed.get(p, 0) < 10]     # 10 records per partition
    firsts = first_offsets(c, len(unread))          # a fully read partition sends nothing more
    assert sorted(firsts) == unread
    for p, off in committed.items():
        if off < 10:                                    # 10 records per partition
            assert firsts[p] == off, (p, firsts[p], off)
    c.close()
    admin = AdminClient({"bootstrap.servers": boot})
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("k2")])["k2"].result(timeout=30)
    assert {tp.partition: tp.offset for tp in offsets.topic_partitions if tp.offset >= 0} == committed
    admin.delete_consumer_groups(["k2"])["k2"].result(timeout=30)
    assert "k2" not in [g.group_id for g in admin.list_consumer_groups().result(timeout=30).valid]


def test_kill9_of_the_coordinator_the_group_continues_with_its_commits(cluster):
    boot = cluster.bootstrap
    create_topic(boot, TOPIC, PARTITIONS)
    a, b = consumer(boot, "k3"), consumer(boot, "k3")
    poll_until([a, b], lambda: split_evenly([a, b]) and sizes([a, b]) == [3, 3], "two members with 3 each")
    acked = {}
    for i in range(1, 6):
        offsets = [TopicPartition(TOPIC, p.partition, i * 10 + p.partition) for p in a.assignment()]
        a.commit(offsets=offsets, asynchronous=False)           # returns once acknowledged
        acked.update({tp.partition: tp.offset for tp in offsets})
    old = coordinator_of(cluster, "k3")
    cluster.broker(old).kill9()
    wait_for(lambda: (n := coordinator_of(cluster, "k3")) != old and n, 60, "a new coordinator")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def committed():
        try:
            res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("k3")])["k3"]
            return {tp.partition: tp.offset for tp in res.result(timeout=10).topic_partitions}
        except Exception:       # noqa: BLE001 - COORDINATOR_LOAD_IN_PROGRESS etc. while it moves
            return None
    assert wait_for(committed, 60, "the committed offsets") == acked
    c = consumer(boot, "k3")                      # the new coordinator runs the group: a third member joins
    poll_until([a, b, c], lambda: split_evenly([a, b, c]) and sizes([a, b, c]) == [2, 2, 2], "three with 2 each", 90)
    desc = admin.describe_consumer_groups(["k3"])["k3"].result(timeout=30)
    assert {m.member_id for m in desc.members} == {x.memberid() for x in (a, b, c)}
    for x in (a, b, c):
        x.close()


def test_classic_and_consumer_groups_side_by_side(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-side"
    create_topic(boot, topic, PARTITIONS)
    produce_all(boot, topic, [(i % PARTITIONS, None, b"v%d" % i, None, None) for i in range(12)])
    new, old = consumer(boot, "side-new", topic), classic_consumer(boot, "side-old", topic)
    poll_until([new, old], lambda: sizes([new]) == [PARTITIONS] and sizes([old]) == [PARTITIONS], "both assigned")
    for c, off in ((new, 1), (old, 2)):
        c.commit(offsets=[TopicPartition(topic, p, off) for p in range(PARTITIONS)], asynchronous=False)
    admin = AdminClient({"bootstrap.servers": boot})
    listed = {g.group_id: g.type for g in admin.list_consumer_groups().result(timeout=30).valid}
    assert listed["side-new"] == ConsumerGroupType.CONSUMER and listed["side-old"] == ConsumerGroupType.CLASSIC
    for group, off in (("side-new", 1), ("side-old", 2)):
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
        assert {tp.partition: tp.offset for tp in res.topic_partitions} == {p: off for p in range(PARTITIONS)}
    new.close()
    old.close()


def test_consumer_group_heartbeat_errors_on_the_wire(shared_cluster):
    cluster, group = shared_cluster, "k-wire"
    coord = coordinator_of(cluster, group)
    port = cluster.broker(coord).port
    join = {"GroupId": group, "MemberId": "m-1", "MemberEpoch": 0, "RebalanceTimeoutMs": 5000,
            "SubscribedTopicNames": ["nothing"], "TopicPartitions": []}
    retriable = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)

    def joined():
        resp = request("127.0.0.1", port, ApiKey.CONSUMER_GROUP_HEARTBEAT, join, 1)
        return None if resp["ErrorCode"] in retriable else resp
    resp = wait_for(joined, 60, "the coordinator loaded")
    assert resp["ErrorCode"] == 0 and resp["MemberId"] == "m-1" and resp["MemberEpoch"] == 1
    assert resp["HeartbeatIntervalMs"] == 500 and resp["Assignment"] == {"TopicPartitions": []}

    def code(**kw):
        return request("127.0.0.1", port, ApiKey.CONSUMER_GROUP_HEARTBEAT, {**join, **kw}, 1)["ErrorCode"]
    assert code(MemberEpoch=5) == ErrorCode.FENCED_MEMBER_EPOCH
    assert code(MemberId="ghost", MemberEpoch=1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert code(ServerAssignor="sticky") == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert code(SubscribedTopicRegex="(") == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert code(RebalanceTimeoutMs=-1) == ErrorCode.INVALID_REQUEST
    assert code(MemberEpoch=-1, TopicPartitions=None) == 0
    described = request("127.0.0.1", port, ApiKey.CONSUMER_GROUP_DESCRIBE, {"GroupIds": [group]}, 1)["Groups"]
    assert described[0]["ErrorCode"] == 0 and described[0]["GroupState"] == "Empty"
    elsewhere = cluster.broker(coordinator_of(cluster, "nope")).port
    unknown = request("127.0.0.1", elsewhere, ApiKey.CONSUMER_GROUP_DESCRIBE, {"GroupIds": ["nope"]}, 1)["Groups"]
    assert unknown[0]["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_new_partitions_and_topics_matching_a_regex_are_assigned(shared_cluster):
    boot, topic = shared_cluster.bootstrap, f"{TOPIC}-grown"
    create_topic(boot, topic, PARTITIONS)
    create_topic(boot, "rx-one", 2)
    a = consumer(boot, "k4", topic)
    poll_until([a], lambda: sizes([a]) == [PARTITIONS], "every partition")
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_partitions([NewPartitions(topic, PARTITIONS + 2)])[topic].result(timeout=30)
    poll_until([a], lambda: sizes([a]) == [PARTITIONS + 2], "the new partitions assigned")
    r = consumer(boot, "k5", topic)
    r.subscribe(["^rx-.*"])
    poll_until([r], lambda: {(p.topic, p.partition) for p in r.assignment()} == {("rx-one", 0), ("rx-one", 1)},
               "the regex's topic")
    create_topic(boot, "rx-two", 1)
    poll_until([r], lambda: ("rx-two", 0) in {(p.topic, p.partition) for p in r.assignment()}, "a new matching topic")
    desc = admin.describe_consumer_groups(["k5"])["k5"].result(timeout=30)
    assert len(desc.members) == 1
    a.close()
    r.close()
