"""Share groups (KIP-932) on the group coordinator over sockets: ShareGroupHeartbeat and
ShareGroupDescribe as a share consumer sends them (raw requests: the share APIs are served but
not advertised until ShareFetch works too)."""
from __future__ import annotations

import base64
import urllib.request

import pytest
from clients import create_topic
from cluster import FAST_REPLICATION, request, wait_for
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from prometheus_client.parser import text_string_to_metric_families
from test_consumer_group_faults import coordinator_of

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

SHARE_PROPS = {**FAST_REPLICATION, "offsets.topic.num.partitions": "3", "metrics.prometheus.listener": "127.0.0.1:0",
               "group.share.min.heartbeat.interval.ms": "500", "group.share.heartbeat.interval.ms": "500",
               "group.share.min.session.timeout.ms": "6000", "group.share.session.timeout.ms": "6000"}
pytestmark = [pytest.mark.integration, pytest.mark.cluster(props=SHARE_PROPS)]
RETRIABLE = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE)


def share_beat(port: int, group: str, member: str, epoch: int, topics: list[str] | None) -> dict:
    return request("127.0.0.1", port, ApiKey.SHARE_GROUP_HEARTBEAT,
                   {"GroupId": group, "MemberId": member, "MemberEpoch": epoch, "RackId": None,
                    "SubscribedTopicNames": topics}, 1)


def share_join(cluster, group: str, member: str, topics: list[str]) -> tuple[int, dict]:
    """Join through the group's coordinator once it is loaded: (its port, the answer)."""
    def joined():
        port = cluster.broker(coordinator_of(cluster, group)).port
        resp = share_beat(port, group, member, 0, topics)
        return None if resp["ErrorCode"] in RETRIABLE else (port, resp)
    return wait_for(joined, 60, f"{member} joined {group}")


def share_describe(port: int, group: str) -> dict:
    return request("127.0.0.1", port, ApiKey.SHARE_GROUP_DESCRIBE,
                   {"GroupIds": [group], "IncludeAuthorizedOperations": True}, 1)["Groups"][0]


def metrics(node) -> dict:
    """The node's /metrics: (sample name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://{node.announced['metrics']}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def partitions(resp: dict) -> set[int]:
    return {p for t in resp["Assignment"]["TopicPartitions"] for p in t["Partitions"]}


def test_share_members_split_a_topic_and_are_described(cluster):
    boot = cluster.bootstrap
    create_topic(boot, "sq", 4)
    port, a = share_join(cluster, "sg1", "member-a", ["sq"])
    assert a["ErrorCode"] == 0 and a["MemberId"] == "member-a" and a["HeartbeatIntervalMs"] == 500
    assert partitions(a) == {0, 1, 2, 3}
    _, b = share_join(cluster, "sg1", "member-b", ["sq"])
    assert b["ErrorCode"] == 0 and b["MemberEpoch"] > a["MemberEpoch"]
    a2 = share_beat(port, "sg1", "member-a", a["MemberEpoch"], None)
    assert a2["ErrorCode"] == 0 and a2["MemberEpoch"] == b["MemberEpoch"]
    assert partitions(a2) | partitions(b) == {0, 1, 2, 3} and not partitions(a2) & partitions(b)
    desc = share_describe(port, "sg1")
    assert desc["ErrorCode"] == 0 and desc["GroupState"] == "Stable" and desc["AssignorName"] == "simple"
    assert desc["AuthorizedOperations"] > 0
    members = {m["MemberId"]: m for m in desc["Members"]}
    assert set(members) == {"member-a", "member-b"}
    assert members["member-a"]["SubscribedTopicNames"] == ["sq"]
    assert members["member-a"]["ClientHost"] == "/127.0.0.1"
    assert {t["TopicName"] for m in members.values() for t in m["Assignment"]["TopicPartitions"]} == {"sq"}
    scraped = metrics(cluster.broker(coordinator_of(cluster, "sg1")))
    assert scraped[("kafka_server_group_coordinator_metrics_group_count", (("protocol", "share"),))] == 1
    assert scraped[("kafka_server_group_coordinator_metrics_share_group_count", (("state", "stable"),))] == 1
    assert scraped[("kafka_server_group_coordinator_metrics_share_group_rebalance_total", ())] >= 2
    assert share_beat(port, "sg1", "member-a", 99, None)["ErrorCode"] == ErrorCode.FENCED_MEMBER_EPOCH
    assert share_beat(port, "sg1", "ghost", 1, None)["ErrorCode"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert share_beat(port, "sg1", "member-c", 0, None)["ErrorCode"] == ErrorCode.INVALID_REQUEST
    left = share_beat(port, "sg1", "member-b", -1, None)
    assert left["ErrorCode"] == 0 and left["MemberEpoch"] == -1
    after = share_beat(port, "sg1", "member-a", a2["MemberEpoch"], None)
    assert after["ErrorCode"] == 0 and partitions(after) == {0, 1, 2, 3}


def test_share_apis_and_the_share_version_feature_are_advertised(cluster):
    port = cluster.brokers[0].port
    hello = {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}
    versions = request("127.0.0.1", port, ApiKey.API_VERSIONS, hello, 3)
    listed = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in versions["ApiKeys"]}
    assert {k: listed.get(k) for k in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE,
                                        ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE)} == \
        {ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1), ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
         ApiKey.SHARE_FETCH: (1, 2), ApiKey.SHARE_ACKNOWLEDGE: (1, 2)}
    assert listed.get(ApiKey.READ_SHARE_GROUP_STATE) == (0, 0)       # between brokers, listed as Kafka does
    assert {"Name": "share.version", "MinVersion": 0, "MaxVersion": 1} in versions["SupportedFeatures"]
    assert {"Name": "share.version", "MaxVersionLevel": 1, "MinVersionLevel": 1} in versions["FinalizedFeatures"]
    unknown = share_describe(cluster.broker(coordinator_of(cluster, "nobody")).port, "nobody")
    assert unknown["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_share_members_survive_a_coordinator_kill_and_the_types_do_not_mix(cluster):
    create_topic(cluster.bootstrap, "sf", 2)
    _, a = share_join(cluster, "sg2", "member-a", ["sf"])
    port, b = share_join(cluster, "sg2", "member-b", ["sf"])
    a = share_beat(port, "sg2", "member-a", a["MemberEpoch"], None)
    assert a["ErrorCode"] == 0 and a["MemberEpoch"] == b["MemberEpoch"]
    join = {"GroupId": "sg2", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": "",
            "GroupInstanceId": None, "ProtocolType": "consumer", "Protocols": [], "Reason": None}
    joined = request("127.0.0.1", port, ApiKey.JOIN_GROUP, join, 9)
    assert joined["ErrorCode"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    fetched = request("127.0.0.1", port, ApiKey.OFFSET_FETCH, {"Groups": [{"GroupId": "sg2", "MemberId": None,
                                                                            "MemberEpoch": -1, "Topics": None}],
                                                                "RequireStable": False}, 9)
    assert fetched["Groups"][0]["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND
    old = coordinator_of(cluster, "sg2")
    cluster.broker(old).kill9()

    def moved():
        node = coordinator_of(cluster, "sg2")
        if node == old:
            return None
        resp = share_beat(cluster.broker(node).port, "sg2", "member-a", a["MemberEpoch"], None)
        return None if resp["ErrorCode"] in RETRIABLE else (node, resp)
    node, again = wait_for(moved, 90, "a new coordinator answering member-a")
    assert again["ErrorCode"] == 0 and again["MemberEpoch"] == a["MemberEpoch"]     # known, same epoch
    desc = share_describe(cluster.broker(node).port, "sg2")
    assert sorted(m["MemberId"] for m in desc["Members"]) == ["member-a", "member-b"]
    assert desc["GroupEpoch"] == a["MemberEpoch"]


def alter_group(admin: AdminClient, group: str, values: dict[str, str]) -> None:
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in values.items()])
    admin.incremental_alter_configs([res])[res].result(timeout=30)


def test_share_group_configs_are_described_altered_and_used(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = ConfigResource(ResourceType.GROUP, "sg3")

    def described() -> dict:
        entries = admin.describe_configs([res])[res].result(timeout=30)
        return {n: (e.value, e.source) for n, e in entries.items() if n.startswith(("share.", "errors."))}
    default = ConfigSource.DEFAULT_CONFIG.value
    assert described() == {"share.session.timeout.ms": ("6000", default), "share.heartbeat.interval.ms": ("500", default),
                           "share.record.lock.duration.ms": ("30000", default),
                           "share.delivery.count.limit": ("5", default), "share.auto.offset.reset": ("latest", default),
                           "share.isolation.level": ("read_uncommitted", default),
                           "errors.deadletterqueue.topic.name": ("", default)}
    for bad in ({"share.isolation.level": "dirty"}, {"share.auto.offset.reset": "none"},
                {"share.delivery.count.limit": "1"}, {"share.heartbeat.interval.ms": "7000"}):
        with pytest.raises(KafkaException) as raised:
            alter_group(admin, "sg3", bad)
        assert raised.value.args[0].code() == KafkaError.INVALID_CONFIG, (bad, raised.value)
    alter_group(admin, "sg3", {"share.heartbeat.interval.ms": "1000", "share.auto.offset.reset": "earliest",
                               "share.isolation.level": "read_committed", "share.delivery.count.limit": "3",
                               "errors.deadletterqueue.topic.name": "dlq.sg3"})
    mine = ConfigSource.GROUP_CONFIG.value
    got = described()
    assert got["share.auto.offset.reset"] == ("earliest", mine) and got["share.heartbeat.interval.ms"] == ("1000", mine)
    assert got["errors.deadletterqueue.topic.name"] == ("dlq.sg3", mine)
    create_topic(cluster.bootstrap, "sc", 1)
    _, joined = share_join(cluster, "sg3", "member-a", ["sc"])
    assert joined["ErrorCode"] == 0 and joined["HeartbeatIntervalMs"] == 1000


def describe_offsets(port: int, group: str, topics=None) -> dict:
    return request("127.0.0.1", port, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                   {"Groups": [{"GroupId": group, "Topics": topics}]}, 0)["Groups"][0]


def alter_offsets(port: int, group: str, topic: str, offsets: dict[int, int]) -> dict:
    return request("127.0.0.1", port, ApiKey.ALTER_SHARE_GROUP_OFFSETS, {"GroupId": group, "Topics": [
        {"TopicName": topic, "Partitions": [{"PartitionIndex": p, "StartOffset": o} for p, o in offsets.items()]}]},
        0, timeout_s=30)


def starts(described: dict) -> dict[tuple[str, int], int]:
    return {(t["TopicName"], p["PartitionIndex"]): p["StartOffset"] for t in described["Topics"] for p in t["Partitions"]}


def state_summary(cluster, group: str, topic_id: bytes, partition: int) -> dict:
    """The share coordinator's ReadShareGroupStateSummary of one share-partition."""
    key = f"{group}:{base64.urlsafe_b64encode(topic_id).decode().rstrip('=')}:{partition}"

    def found():
        for b in cluster.brokers:
            resp = request("127.0.0.1", b.port, ApiKey.FIND_COORDINATOR, {"KeyType": 2, "CoordinatorKeys": [key]}, 6)
            c = resp["Coordinators"][0]
            if c["ErrorCode"] == 0:
                return c["Port"]
        return None
    port = wait_for(found, 60, "the share coordinator")
    body = {"GroupId": group, "Topics": [{"TopicId": topic_id, "Partitions": [{"Partition": partition,
                                                                              "LeaderEpoch": -1}]}]}
    return request("127.0.0.1", port, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, body, 0)["Results"][0]["Partitions"][0]


def test_share_group_offsets_are_described_altered_deleted_and_the_group_listed_and_deleted(cluster):
    create_topic(cluster.bootstrap, "so", 2)
    port, a = share_join(cluster, "sg4", "member-a", ["so"])
    assert starts(describe_offsets(port, "sg4")) == {("so", 0): -1, ("so", 1): -1}     # assigned, no state yet
    busy = alter_offsets(port, "sg4", "so", {0: 5})
    assert busy["ErrorCode"] == ErrorCode.NON_EMPTY_GROUP
    listed = request("127.0.0.1", port, ApiKey.LIST_GROUPS, {"StatesFilter": [], "TypesFilter": ["share"]}, 5)
    assert [(g["GroupId"], g["GroupType"], g["GroupState"]) for g in listed["Groups"]] == [("sg4", "share", "Stable")]
    assert share_beat(port, "sg4", "member-a", a["MemberEpoch"], None)["ErrorCode"] == 0
    assert share_beat(port, "sg4", "member-a", -1, None)["ErrorCode"] == 0
    altered = wait_for(lambda: (r := alter_offsets(port, "sg4", "so", {0: 5, 1: 7, 9: 1}))["Responses"][0][
        "Partitions"][0]["ErrorCode"] != ErrorCode.COORDINATOR_NOT_AVAILABLE and r, 60, "__share_group_state up")
    assert {p["PartitionIndex"]: p["ErrorCode"] for p in altered["Responses"][0]["Partitions"]} == {
        0: 0, 1: 0, 9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert starts(describe_offsets(port, "sg4")) == {("so", 0): 5, ("so", 1): 7}
    named = describe_offsets(port, "sg4", [{"TopicName": "so", "Partitions": [1]}, {"TopicName": "nope",
                                                                                      "Partitions": [0]}])
    assert [(t["TopicName"], [(p["PartitionIndex"], p["StartOffset"], p["ErrorCode"]) for p in t["Partitions"]])
            for t in named["Topics"]] == [("so", [(1, 7, 0)]), ("nope", [(0, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    groups = {g.group_id: g for g in admin.list_consumer_groups().result(timeout=30).valid}
    assert "sg4" not in groups          # protocol type share: not a consumer group to librdkafka (nor Kafka's admin)
    deleted = request("127.0.0.1", port, ApiKey.DELETE_SHARE_GROUP_OFFSETS,
                      {"GroupId": "sg4", "Topics": [{"TopicName": "so"}, {"TopicName": "nope"}]}, 0, timeout_s=30)
    assert deleted["ErrorCode"] == 0 and [(t["TopicName"], t["ErrorCode"]) for t in deleted["Responses"]] == [
        ("so", 0), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert describe_offsets(port, "sg4")["Topics"] == []
    topic_id = altered["Responses"][0]["TopicId"]
    assert state_summary(cluster, "sg4", topic_id, 0)["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert alter_offsets(port, "sg4", "so", {0: 3})["Responses"][0]["Partitions"][0]["ErrorCode"] == 0
    assert state_summary(cluster, "sg4", topic_id, 0)["StartOffset"] == 3
    admin.delete_consumer_groups(["sg4"])["sg4"].result(timeout=30)
    assert describe_offsets(port, "sg4")["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert state_summary(cluster, "sg4", topic_id, 0)["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
