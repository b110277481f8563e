"""Share groups held by the group shard (``GroupShard.share_heartbeat`` / ``share_describe``,
KIP-932): answers shaped as ShareGroupHeartbeat / ShareGroupDescribe responses, kept apart from
classic and consumer groups, listed with type share, expired by the group's timer, written to
__consumer_offsets as Kafka's share-group records and rebuilt from them."""
import random

import pytest

from tierlog.config import NodeConfig
from tierlog.group.consumer_group import TopicsView
from tierlog.group.group_config import GroupConfig
from tierlog.group.shard import GroupShard
from tierlog.protocol.errors import ErrorCode

T1 = b"\x01" * 16
VIEW = TopicsView({"t": (T1, 4)}, version=1)


def _shard():
    s = GroupShard(0, GroupConfig(), random.Random(1))
    s.log = []                                        # what it wrote, in order
    return s


def _reloaded(s, now=0):
    """A new shard loaded from ``s``'s records (a coordinator failover)."""
    fresh = _shard()
    for key, value in s.log:
        fresh.replay(key, value)
    fresh.loaded(now)
    fresh.log = list(s.log)                           # it goes on writing to the same log
    return fresh


def _hb(s, member, epoch, topics=("t",), now=0, group="s"):
    req = {"GroupId": group, "MemberId": member, "MemberEpoch": epoch, "RackId": None,
           "SubscribedTopicNames": list(topics) if topics is not None else None, "client_id": "c", "client_host": "/h"}
    out = s.share_heartbeat(req, "tok", now, VIEW)
    s.log += out.records
    (_, resp), = out.answers
    return resp


def test_two_members_split_the_partitions():
    s = _shard()
    a = _hb(s, "a", 0)
    assert (a["ErrorCode"], a["MemberId"], a["MemberEpoch"], a["HeartbeatIntervalMs"]) == (0, "a", 1, 5000)
    assert a["Assignment"] == {"TopicPartitions": [{"TopicId": T1, "Partitions": [0, 1, 2, 3]}]}
    b = _hb(s, "b", 0, now=10)
    assert b["Assignment"] == {"TopicPartitions": [{"TopicId": T1, "Partitions": [1, 3]}]}
    a = _hb(s, "a", 1, topics=None, now=20)
    assert a["MemberEpoch"] == 2 and a["Assignment"] == {"TopicPartitions": [{"TopicId": T1, "Partitions": [0, 2]}]}
    described = s.share_describe("s", VIEW)
    assert (described["ErrorCode"], described["GroupState"], described["AssignorName"]) == (0, "Stable", "simple")
    assert [(m["MemberId"], m["ClientHost"], m["Assignment"]["TopicPartitions"][0]["TopicName"])
            for m in described["Members"]] == [("a", "/h", "t"), ("b", "/h", "t")]
    assert s.list_groups([], ["share"]) == [{"GroupId": "s", "ProtocolType": "share", "GroupState": "Stable",
                                             "GroupType": "share"}]


def test_errors_are_the_heartbeat_responses():
    s = _shard()
    unknown = _hb(s, "x", 3)
    assert (unknown["ErrorCode"], unknown["MemberId"], unknown["Assignment"]) == (ErrorCode.UNKNOWN_MEMBER_ID, None, None)
    assert _hb(s, "a", 0, topics=None)["ErrorCode"] == ErrorCode.INVALID_REQUEST
    assert "s" not in s.share_groups                  # a refused join leaves no group behind
    assert s.share_describe("s", VIEW)["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_classic_or_consumer_group_id_is_not_a_share_group():
    s = _shard()
    s.commit_offsets({"GroupId": "c", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
                      "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1,
                                                               "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]},
                     "tok", 0)
    assert "c" in s.groups
    refused = _hb(s, "a", 0, group="c")
    assert refused["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND and "not a share group" in refused["ErrorMessage"]
    assert s.share_describe("c", VIEW)["ErrorMessage"] == "Group c is not a share group."
    assert "c" not in s.share_groups


def test_the_timer_expires_members_and_an_empty_group_goes():
    s = _shard()
    _hb(s, "a", 0, now=0)
    _hb(s, "b", 0, now=1000)
    assert s.next_deadline_ms("s") == 45000           # group.share.session.timeout.ms
    s.log += s.tick_group("s", 45000).records
    assert list(s.share_groups["s"].members) == ["b"] and s.next_deadline_ms("s") == 46000
    assert _hb(s, "b", 2, topics=None, now=45500)["Assignment"] == \
        {"TopicPartitions": [{"TopicId": T1, "Partitions": [0, 1, 2, 3]}]}
    assert _hb(s, "b", 3, topics=None, now=45600)["MemberEpoch"] == 3
    left = _hb(s, "b", -1, now=45700)
    assert (left["ErrorCode"], left["MemberEpoch"]) == (0, -1) and not s.share_groups["s"].members
    assert s.next_deadline_ms("s") is None
    assert s.list_groups([], []) == [{"GroupId": "s", "ProtocolType": "share", "GroupState": "Empty",
                                      "GroupType": "share"}]       # an empty share group stays until deleted
    assert _reloaded(s).list_groups([], []) == s.list_groups([], [])


def test_the_node_configs_set_timeouts_and_size():
    cfg = GroupConfig.from_node_config(NodeConfig({"node.id": "1", "group.share.session.timeout.ms": "50000",
                                                   "group.share.max.size": "1"}))
    s = GroupShard(0, cfg, random.Random(1))
    s.log = []
    assert _hb(s, "a", 0)["HeartbeatIntervalMs"] == 5000
    assert s.next_deadline_ms("s") == 50000
    assert _hb(s, "b", 0)["ErrorCode"] == ErrorCode.GROUP_MAX_SIZE_REACHED
    with pytest.raises(ValueError, match=r"group.share.heartbeat.interval.ms=20000 must be within \[5000, 15000\]"):
        GroupConfig.from_node_config(NodeConfig({"node.id": "1", "group.share.heartbeat.interval.ms": "20000"}))


def test_a_failover_keeps_members_epochs_and_assignments():
    s = _shard()
    _hb(s, "a", 0)
    b = _hb(s, "b", 0, now=10)
    a = _hb(s, "a", 1, topics=None, now=20)
    assert not s.share_heartbeat({"GroupId": "s", "MemberId": "a", "MemberEpoch": 2, "RackId": None,
                                  "SubscribedTopicNames": None}, "tok", 30, VIEW).records   # nothing changed
    loaded = _reloaded(s, now=1000)
    assert loaded.share_describe("s", VIEW) == s.share_describe("s", VIEW)
    assert loaded.next_deadline_ms("s") == 1000 + 45000           # sessions start at the load
    again = _hb(loaded, "a", a["MemberEpoch"], topics=None, now=1100)
    assert (again["ErrorCode"], again["MemberEpoch"], again["Assignment"]) == (0, 2, None)   # no new epoch
    assert _hb(loaded, "b", b["MemberEpoch"], topics=None, now=1100)["ErrorCode"] == ErrorCode.NONE
    _hb(loaded, "b", -1, now=1200)
    assert list(_reloaded(loaded).share_groups["s"].members) == ["a"]


def test_the_records_are_kafkas_share_group_types():
    s = _shard()
    _hb(s, "a", 0)
    assert [int.from_bytes(k[:2], "big") for k, _v in s.log] == [10, 11, 13, 12, 14, 15]
    _hb(s, "a", -1, now=5)
    assert [(int.from_bytes(k[:2], "big"), v is None) for k, v in s.log[6:]] == [
        (14, True), (13, True), (10, True), (11, False)]      # the target waits for the next heartbeat


def test_the_types_do_not_mix():
    s = _shard()
    _hb(s, "a", 0, group="sh")
    c = s._ctx(0)
    join = {"GroupId": "sh", "MemberId": "", "GroupInstanceId": None, "ProtocolType": "consumer",
            "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "Protocols": [], "version": 9}
    (_, joined), = s.join(join, "tok", 0).answers
    assert joined["ErrorCode"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    beat = {"GroupId": "sh", "MemberId": "m", "MemberEpoch": 0, "RebalanceTimeoutMs": 5000,
            "SubscribedTopicNames": ["t"], "TopicPartitions": [], "client_id": "c", "client_host": "/h"}
    (_, consumer), = s.consumer_heartbeat(beat, "tok", 0, VIEW).answers
    assert consumer["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND
    commit = {"GroupId": "sh", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
              "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1,
                                                       "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]}
    (_, committed), = s.commit_offsets(commit, "tok", 0).answers
    assert committed["Topics"][0]["Partitions"][0]["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert s.fetch_offsets("sh", None)["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert "sh" not in s.groups and c.out.records == []


def test_delete_refuses_a_group_with_members_and_tombstones_an_empty_one():
    s = _shard()
    _hb(s, "a", 0)
    (_, resp), = s.delete_groups(["s"], "tok", 0).answers
    assert resp["Results"] == [{"GroupId": "s", "ErrorCode": ErrorCode.NON_EMPTY_GROUP}]
    _hb(s, "a", -1, now=5)
    out = s.delete_groups(["s"], "tok", 10)
    s.log += out.records
    assert out.answers[0][1]["Results"] == [{"GroupId": "s", "ErrorCode": 0}] and "s" not in s.share_groups
    assert all(v is None for _k, v in out.records) and int.from_bytes(out.records[-1][0][:2], "big") in (11, 12)
    assert _reloaded(s).share_groups == {}


def test_the_groups_share_configs_replace_the_nodes():
    configs = {"s": {"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000"}}
    s = GroupShard(0, GroupConfig(), random.Random(1), lambda group_id: configs.get(group_id, {}))
    s.log = []
    assert _hb(s, "a", 0)["HeartbeatIntervalMs"] == 6000 and s.next_deadline_ms("s") == 50000
    configs["s"] = {}                                 # deleted: the node's again at the next heartbeat
    assert _hb(s, "a", 1, topics=None, now=10)["HeartbeatIntervalMs"] == 5000 and s.next_deadline_ms("s") == 45010


def test_the_share_partitions_with_state_are_kept_altered_and_deleted():
    s = _shard()
    assert s.share_state_topics("s") == (ErrorCode.NONE, None, {})
    _hb(s, "a", 0)
    assert s.share_state_topics("s") == (ErrorCode.NONE, True, {T1: ("t", frozenset({0, 1, 2, 3}))})
    (_, busy), = s.share_offsets_altered("s", [(T1, "t", frozenset({0}))], {"ErrorCode": 0, "Responses": []},
                                         "tok", 1).answers
    assert busy["ErrorCode"] == ErrorCode.NON_EMPTY_GROUP         # only while it has no members
    _hb(s, "a", -1, now=2)
    t2 = b"\x02" * 16
    out = s.share_offsets_altered("s", [(t2, "u", frozenset({5}))], {"ErrorCode": 0, "Responses": []}, "tok", 3)
    s.log += out.records
    assert out.answers[0][1]["ErrorCode"] == 0
    assert _reloaded(s).share_state_topics("s")[2] == {T1: ("t", frozenset({0, 1, 2, 3})), t2: ("u", frozenset({5}))}
    s.log += s.share_offsets_deleted("s", [T1], {"ErrorCode": 0}, "tok", 4).records
    assert _reloaded(s).share_state_topics("s")[2] == {t2: ("u", frozenset({5}))}
    out = s.share_offsets_altered("new", [(t2, "u", frozenset({0}))], {"ErrorCode": 0}, "tok", 5)
    assert out.records and s.share_state_topics("new") == (ErrorCode.NONE, False, {t2: ("u", frozenset({0}))})


def test_a_deleted_topic_leaves_the_share_groups_state_topics():
    s = _shard()
    _hb(s, "a", 0)
    out = s.delete_topic_offsets({"t"}, 5, {T1})
    s.log += out.records
    assert out.records and s.share_state_topics("s")[2] == {}
    assert _reloaded(s).share_state_topics("s")[2] == {}
    assert not s.delete_topic_offsets({"t"}, 6, {T1}).records            # nothing left to forget
