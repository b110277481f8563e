"""Kafka conformance over sockets (issue 21, item 7): answers real clients rely on, each as Kafka gives it.

One node (broker and controller) serves every test of the module; each test uses its own
topics and groups.  The node's group settings: a 4 s initial rebalance delay (a consumer that
closes within it must still leave the group Empty at once), group.min.session.timeout.ms 6000,
and KIP-848 bounds low enough for a group to lower its session timeout to 3 s.
"""
from __future__ import annotations

import socket
import struct
import time

import pytest
from clients import create_topic
from cluster import request, wait_for
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka import KafkaProducer
from kafka import errors as kafka_errors
from nodeproc import NodeProcess

from tierlog.protocol import encode_request
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration

PROPS = {"group.initial.rebalance.delay.ms": "4000", "offsets.topic.num.partitions": "1",
         "group.consumer.min.session.timeout.ms": "3000", "group.consumer.min.heartbeat.interval.ms": "500"}
SESSION_MS = "consumer.session.timeout.ms"
HEARTBEAT_MS = "consumer.heartbeat.interval.ms"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    n = NodeProcess(tmp_path_factory.mktemp("conformance") / "node-1", props=PROPS).start()
    yield n
    _admins.pop(n.bootstrap, None)
    if n.alive():
        n.stop()


_admins: dict[str, AdminClient] = {}


def admin(node) -> AdminClient:
    """One AdminClient per node, kept alive (a dropped client cancels its futures: _DESTROY)."""
    return _admins.setdefault(node.bootstrap, AdminClient({"bootstrap.servers": node.bootstrap}))


def group_state(node, group: str):
    """(state name, member count) of a group as DescribeGroups / ConsumerGroupDescribe give it."""
    desc = admin(node).describe_consumer_groups([group])[group].result(timeout=30)
    return str(desc.state).rsplit(".", 1)[-1], len(desc.members)


# -- OffsetCommit / AlterConsumerGroupOffsets --------------------------------------------------

def test_offset_commits_for_unknown_topics_and_partitions_fail_per_partition(node):
    create_topic(node.bootstrap, "commits", 2)
    wanted = [TopicPartition("commits", 0, 5), TopicPartition("commits", 7, 5), TopicPartition("no-such-topic", 0, 3)]
    c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "commit-unknown", "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as raised:
            c.commit(offsets=wanted, asynchronous=False)
        assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, raised.value
    finally:
        c.close()
    altered = admin(node).alter_consumer_group_offsets([ConsumerGroupTopicPartitions("commit-unknown", wanted)])[
        "commit-unknown"].result(timeout=30)
    assert [(tp.topic, tp.partition, tp.error.code() if tp.error else None) for tp in altered.topic_partitions] == [
        ("commits", 0, None), ("commits", 7, KafkaError.UNKNOWN_TOPIC_OR_PART),
        ("no-such-topic", 0, KafkaError.UNKNOWN_TOPIC_OR_PART)]
    committed = admin(node).list_consumer_group_offsets([ConsumerGroupTopicPartitions("commit-unknown")])[
        "commit-unknown"].result(timeout=30)
    assert {(tp.topic, tp.partition): tp.offset for tp in committed.topic_partitions} == {("commits", 0): 5}


# -- Produce: KIP-467 record errors ------------------------------------------------------------

def test_keyless_records_to_a_compacted_topic_fail_exactly_those_records(node):
    create_topic(node.bootstrap, "compacted", 1, {"cleanup.policy": "compact"})
    keys = [b"k0", None, b"k2", None, b"k4"]
    results = {}
    p = Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 500, "acks": "all"})
    for i, key in enumerate(keys):      # one batch: refused whole, its RecordErrors name records 1 and 3
        p.produce("compacted", value=b"v%d" % i, key=key, partition=0,
                  on_delivery=lambda err, msg, i=i: results.__setitem__(i, err))
    assert p.flush(30) == 0
    codes = {i: err.code() if err else None for i, err in results.items()}
    assert codes == {0: KafkaError._INVALID_DIFFERENT_RECORD, 1: KafkaError.INVALID_RECORD,
                     2: KafkaError._INVALID_DIFFERENT_RECORD, 3: KafkaError.INVALID_RECORD,
                     4: KafkaError._INVALID_DIFFERENT_RECORD}, codes
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, linger_ms=500, acks="all")
    try:
        futures = [producer.send("compacted", value=b"v", key=key, partition=0) for key in (b"a", None, b"c")]
        producer.flush(30)
    finally:
        producer.close()
    errors = [f.exception for f in futures]     # kafka-python shows each record's BatchIndexErrorMessage
    assert isinstance(errors[1], kafka_errors.InvalidRecordError), errors
    assert "without key in topic partition compacted-0" in str(errors[1])
    assert all("part of a batch which had one more more invalid records" in str(errors[i]) for i in (0, 2)), errors


# -- invalid topic names -----------------------------------------------------------------------

BAD_NAMES = ["bad/name", "x" * 250, "..", "."]


def test_producing_to_an_invalid_topic_name_fails_fast(node):
    results = {}
    p = Producer({"bootstrap.servers": node.bootstrap, "message.timeout.ms": 120000})
    for name in BAD_NAMES:
        p.produce(name, value=b"v", on_delivery=lambda err, msg, name=name: results.__setitem__(name, err))
    assert p.flush(30) == 0, "the producer could not flush: its records wait for topics that can never exist"
    assert {n: e.code() for n, e in results.items()} == {n: KafkaError.TOPIC_EXCEPTION for n in BAD_NAMES}
    meta = request("127.0.0.1", node.port, ApiKey.METADATA, {"Topics": [{"Name": n} for n in BAD_NAMES],
                                                               "AllowAutoTopicCreation": True}, 12)
    assert [t["ErrorCode"] for t in meta["Topics"]] == [ErrorCode.INVALID_TOPIC_EXCEPTION] * len(BAD_NAMES)
    assert not set(BAD_NAMES) & set(admin(node).list_topics(timeout=30).topics)


# -- leaving empties the group at once -----------------------------------------------------------

def send_only(port: int, api_key: int, version: int, body: dict) -> socket.socket:
    """Send one request and leave its answer unread (a JoinGroup that waits in the join phase)."""
    frame = encode_request(api_key, version, 1, "tierlog-tests", body)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(struct.pack(">i", len(frame)) + frame)
    return s


def test_leave_empties_the_group_at_once_so_delete_groups_succeeds(node):
    """LeaveGroup of the last member ends the join phase at once, even inside a new group's initial
    rebalance delay (Kafka's removeMemberAndUpdateClassicGroup); a KIP-848 leave (epoch -1) likewise."""
    group = "leave-in-delay"
    join = {"GroupId": group, "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": "",
            "GroupInstanceId": None, "ProtocolType": "consumer", "Protocols": [{"Name": "range", "Metadata": b""}]}

    def member_id():
        request("127.0.0.1", node.port, ApiKey.FIND_COORDINATOR, {"Key": group, "KeyType": 0}, 2)  # makes the topic
        resp = request("127.0.0.1", node.port, ApiKey.JOIN_GROUP, join, 5)
        return resp["MemberId"] if resp["ErrorCode"] == ErrorCode.MEMBER_ID_REQUIRED else None
    member = wait_for(member_id, 30, "the coordinator loaded")
    waiting = send_only(node.port, ApiKey.JOIN_GROUP, 5, {**join, "MemberId": member})   # waits out the 4 s delay
    try:
        wait_for(lambda: group_state(node, group) == ("PREPARING_REBALANCING", 1), 10, "the member in the join phase")
        left = request("127.0.0.1", node.port, ApiKey.LEAVE_GROUP, {"GroupId": group, "Members": [
            {"MemberId": member, "GroupInstanceId": None}]}, 3)
        assert left["Members"][0]["ErrorCode"] == ErrorCode.NONE
        deleted = admin(node).delete_consumer_groups([group], request_timeout=30)[group]
        deleted.result(timeout=30)      # NON_EMPTY_GROUP (still PreparingRebalance) would raise
    finally:
        waiting.close()
    create_topic(node.bootstrap, "leaving", 2)
    for protocol in ("classic", "consumer"):
        group = f"leave-{protocol}"
        c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group, "group.protocol": protocol})
        c.subscribe(["leaving"])
        wait_for(lambda c=c: c.poll(0.1) is None and len(c.assignment()) == 2, 30, f"the {protocol} member assigned")
        c.close()
        admin(node).delete_consumer_groups([group], request_timeout=30)[group].result(timeout=30)


# -- static members and session timeouts -----------------------------------------------------------

def test_static_members_expire_by_session_timeout_and_bad_session_timeouts_are_refused(node):
    """Classic static members (session.timeout.ms 6000) and KIP-848 static members (their group's
    consumer.session.timeout.ms 3000) that close without leaving expire and leave their groups Empty;
    a session.timeout.ms below group.min.session.timeout.ms is refused."""
    create_topic(node.bootstrap, "statics", 3)
    alter_group(node, "statics-848", consumer_session_timeout_ms="3000", consumer_heartbeat_interval_ms="1000")
    classic = [Consumer({"bootstrap.servers": node.bootstrap, "group.id": "statics", "group.instance.id": f"i-{i}",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}) for i in range(3)]
    modern = [Consumer({"bootstrap.servers": node.bootstrap, "group.id": "statics-848", "group.instance.id": f"i-{i}",
                        "group.protocol": "consumer"}) for i in range(3)]
    members = classic + modern
    for m in members:
        m.subscribe(["statics"])
    deadline = time.monotonic() + 60
    while not all(len(m.assignment()) == 1 for m in members):
        assert time.monotonic() < deadline, "the static members were not assigned"
        for m in members:
            m.poll(0.05)
    for m in members:
        m.close()           # a static member's close() does not leave the group: its session must expire
    assert group_state(node, "statics")[1] == 3 and group_state(node, "statics-848")[1] == 3
    # bounded well below the broker's group.consumer.session.timeout.ms (45 s) for the KIP-848 group
    wait_for(lambda: group_state(node, "statics") == ("EMPTY", 0) and group_state(node, "statics-848") == ("EMPTY", 0),
             25, "the static members' sessions expired")
    short = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "statics-short", "group.instance.id": "i-0",
                      "session.timeout.ms": 5000})      # below group.min.session.timeout.ms (6000)
    short.subscribe(["statics"])
    try:
        def refused():
            msg = short.poll(0.2)
            return msg is not None and msg.error() is not None and msg.error().code() == KafkaError.INVALID_SESSION_TIMEOUT
        wait_for(refused, 30, "INVALID_SESSION_TIMEOUT for session.timeout.ms=5000")
    finally:
        short.close()


# -- KIP-848 group configs ---------------------------------------------------------------------

def group_configs(node, group: str, prefix: str = "consumer.") -> dict:
    """The group's configs whose names start with ``prefix`` (the consumer protocol's by default)."""
    res = ConfigResource(ResourceType.GROUP, group)
    entries = admin(node).describe_configs([res])[res].result(timeout=30)
    return {name: (e.value, e.source) for name, e in entries.items() if name.startswith(prefix)}


def alter_group(node, group: str, **values) -> None:
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
        for name, value in values.items()])
    admin(node).incremental_alter_configs([res])[res].result(timeout=30)


def test_group_configs_are_described_altered_kept_and_used(node):
    group = "configured"
    assert group_configs(node, group) == {SESSION_MS: ("45000", ConfigSource.DEFAULT_CONFIG.value),
                                          HEARTBEAT_MS: ("5000", ConfigSource.DEFAULT_CONFIG.value)}
    for bad in ({"consumer_session_timeout_ms": "1000"}, {"consumer_session_timeout_ms": "999999"},
                {"consumer_heartbeat_interval_ms": "fast"}, {"consumer_no_such_config": "1"}):
        with pytest.raises(KafkaException) as raised:
            alter_group(node, group, **bad)
        assert raised.value.args[0].code() == KafkaError.INVALID_CONFIG, (bad, raised.value)
    alter_group(node, group, consumer_session_timeout_ms="3000", consumer_heartbeat_interval_ms="1000")
    assert group_configs(node, group) == {SESSION_MS: ("3000", ConfigSource.GROUP_CONFIG.value),
                                          HEARTBEAT_MS: ("1000", ConfigSource.GROUP_CONFIG.value)}
    with pytest.raises(KafkaException) as raised:       # the heartbeat interval must stay below the session timeout
        alter_group(node, group, consumer_heartbeat_interval_ms="3000")
    assert raised.value.args[0].code() == KafkaError.INVALID_CONFIG
    join = {"GroupId": group, "MemberId": "silent", "MemberEpoch": 0, "RebalanceTimeoutMs": 5000,
            "SubscribedTopicNames": ["nothing"], "TopicPartitions": []}

    def joined():
        # as a client does: FindCoordinator first (it creates __consumer_offsets when this test runs alone)
        request("127.0.0.1", node.port, ApiKey.FIND_COORDINATOR, {"Key": group, "KeyType": 0}, 2)
        resp = request("127.0.0.1", node.port, ApiKey.CONSUMER_GROUP_HEARTBEAT, join, 1)
        return resp if resp["ErrorCode"] == ErrorCode.NONE else None
    assert wait_for(joined, 30, "the member joined")["HeartbeatIntervalMs"] == 1000
    # it never heartbeats again: the group's 3 s session timeout removes it, long before the broker's 45 s
    wait_for(lambda: group_state(node, group) == ("EMPTY", 0), 25, "the silent member expired")
    node.restart()
    _admins.pop(node.bootstrap)     # a fresh client: librdkafka's old one keeps waiting for the restarted controller
    wait_for(lambda: request("127.0.0.1", node.port, ApiKey.METADATA, {"Topics": []}, 12)["Brokers"], 60,
             "the restarted broker unfenced")
    assert group_configs(node, group) == {SESSION_MS: ("3000", ConfigSource.GROUP_CONFIG.value),
                                          HEARTBEAT_MS: ("1000", ConfigSource.GROUP_CONFIG.value)}
