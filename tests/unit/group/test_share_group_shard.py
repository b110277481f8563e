"""Share groups held by the group shard (``GroupShard.share_heartbeat`` / ``share_describe``,
KIP-932): answers shaped as ShareGroupHeartbeat / ShareGroupDescribe responses, kept apart from
classic and consumer groups, listed with type share, expired by the group's timer, in memory only."""
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
    return GroupShard(0, GroupConfig(), random.Random(1))


def _hb(s, member, epoch, topics=("t",), now=0, group="s"):
    req = {"GroupId": group, "MemberId": member, "MemberEpoch": epoch, "RackId": None,
           "SubscribedTopicNames": list(topics) if topics is not None else None, "client_id": "c", "client_host": "/h"}
    out = s.share_heartbeat(req, "tok", now, VIEW)
    assert out.records == []                          # membership is not persisted yet
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
    s.tick_group("s", 45000)
    assert list(s.share_groups["s"].members) == ["b"] and s.next_deadline_ms("s") == 46000
    assert _hb(s, "b", 2, topics=None, now=45500)["Assignment"] == \
        {"TopicPartitions": [{"TopicId": T1, "Partitions": [0, 1, 2, 3]}]}
    assert _hb(s, "b", 3, topics=None, now=45600)["MemberEpoch"] == 3
    left = _hb(s, "b", -1, now=45700)
    assert (left["ErrorCode"], left["MemberEpoch"]) == (0, -1) and s.share_groups == {}
    assert s.next_deadline_ms("s") is None and s.list_groups([], []) == []


def test_the_node_configs_set_timeouts_and_size():
    cfg = GroupConfig.from_node_config(NodeConfig({"node.id": "1", "group.share.session.timeout.ms": "50000",
                                                   "group.share.max.size": "1"}))
    s = GroupShard(0, cfg, random.Random(1))
    assert _hb(s, "a", 0)["HeartbeatIntervalMs"] == 5000
    assert s.next_deadline_ms("s") == 50000
    assert _hb(s, "b", 0)["ErrorCode"] == ErrorCode.GROUP_MAX_SIZE_REACHED
    with pytest.raises(ValueError, match=r"group.share.heartbeat.interval.ms=20000 must be within \[5000, 15000\]"):
        GroupConfig.from_node_config(NodeConfig({"node.id": "1", "group.share.heartbeat.interval.ms": "20000"}))
