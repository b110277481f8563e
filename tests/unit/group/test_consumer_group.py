"""The consumer group protocol (KIP-848) through GroupShard, sans-IO: joins, reconciliation,
fencing, errors, metadata changes, reload from records, offsets and deletion."""
import random

import pytest

from tierlog.group import GroupConfig, GroupShard, TopicsView
from tierlog.group.group import ClassicGroup
from tierlog.group.reconcile import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
)
from tierlog.protocol.errors import ErrorCode as E

CFG = GroupConfig(consumer_heartbeat_interval_ms=500, consumer_session_timeout_ms=1000, consumer_max_size=3)
T1, T2 = b"\x01" * 16, b"\x02" * 16
VIEW = TopicsView({"t": (T1, 6), "other": (T2, 2)}, version=1)


WRITTEN = []        # every heartbeat's output, for the reload test


def shard(cfg=CFG):
    return GroupShard(0, cfg, random.Random(1))


def hb(s, member="", epoch=0, owned=(), topics=("t",), now=0, view=VIEW, regex=None, assignor=None,
       instance=None, group="g", rebalance=5000):
    """One heartbeat; ``owned`` None omits the owned partitions (as clients do when unchanged)."""
    req = {"GroupId": group, "MemberId": member, "MemberEpoch": epoch, "InstanceId": instance, "RackId": None,
           "RebalanceTimeoutMs": rebalance if epoch == 0 else -1,
           "SubscribedTopicNames": list(topics) if topics is not None else None,
           "SubscribedTopicRegex": regex, "ServerAssignor": assignor,
           "TopicPartitions": None if owned is None else [{"TopicId": T1, "Partitions": sorted(owned)}] if owned
           else [], "client_id": "c", "client_host": "/"}
    out = s.consumer_heartbeat(req, "tok", now, view)
    WRITTEN.append(out)
    (_, resp), = out.answers
    return resp, out


def parts(resp, tid=T1):
    if resp["Assignment"] is None:
        return None
    return {p for t in resp["Assignment"]["TopicPartitions"] if t["TopicId"] == tid for p in t["Partitions"]}


def join(s, member, **kw):
    resp, _ = hb(s, member, 0, **kw)
    assert resp["ErrorCode"] == E.NONE, resp
    return resp


def test_one_member_gets_every_partition_at_once():
    s = shard()
    r = join(s, "a")
    assert r["MemberId"] == "a" and r["MemberEpoch"] == 1 and parts(r) == set(range(6))
    assert r["HeartbeatIntervalMs"] == 500
    assert s.consumer_describe("g", VIEW)["GroupState"] == "Stable"


def test_a_partition_moves_only_after_its_owner_revoked_it():
    s = shard()
    join(s, "a")
    rb = join(s, "b")                                           # group epoch 2; a still owns everything
    assert rb["MemberEpoch"] == 2 and parts(rb) == set()        # b's partitions are unreleased
    group = s.groups["g"]
    assert group.members["b"].current.state == UNRELEASED_PARTITIONS
    ra, _ = hb(s, "a", 1, owned=range(6))                       # a is told to revoke 3 partitions
    kept = parts(ra)
    assert len(kept) == 3 and ra["MemberEpoch"] == 1
    assert group.members["a"].current.state == UNREVOKED_PARTITIONS
    rb, _ = hb(s, "b", 2, owned=())                              # a has not revoked yet: b still waits
    assert parts(rb) is None and group.members["b"].current.state == UNRELEASED_PARTITIONS
    ra, _ = hb(s, "a", 1, owned=kept)                           # a revoked: epoch 2, stable
    assert ra["MemberEpoch"] == 2 and group.members["a"].current.state == STABLE
    rb, _ = hb(s, "b", 2, owned=())
    assert parts(rb) == set(range(6)) - kept and group.members["b"].current.state == STABLE
    assert s.consumer_describe("g", VIEW)["GroupState"] == "Stable"


def _owners_never_overlap(s):
    seen = {}
    for m in s.groups["g"].members.values():
        for tid, ps in m.current.owned().items():
            for p in ps:
                assert (tid, p) not in seen, f"{p} owned by {seen[(tid, p)]} and {m.member_id}"
                seen[(tid, p)] = m.member_id


def stable_pair(s):
    join(s, "a")
    join(s, "b")
    ra, _ = hb(s, "a", 1, owned=range(6))
    hb(s, "a", 1, owned=parts(ra))
    rb, _ = hb(s, "b", 2, owned=())
    return parts(ra), parts(rb)


def test_third_member_joins_and_leaves_and_partitions_are_redistributed():
    s = shard()
    pa, pb = stable_pair(s)
    rc = join(s, "c")
    epoch = rc["MemberEpoch"]
    owned = {"a": pa, "b": pb, "c": set()}
    epochs = {"a": 2, "b": 2, "c": epoch}
    for _ in range(4):                        # everyone heartbeats with what it owns until stable
        for m in "abc":
            r, _ = hb(s, m, epochs[m], owned=owned[m])
            assert r["ErrorCode"] == E.NONE, r
            epochs[m] = r["MemberEpoch"]
            if parts(r) is not None:
                owned[m] = parts(r)
            _owners_never_overlap(s)
    assert sorted(len(owned[m]) for m in "abc") == [2, 2, 2]
    assert set().union(*owned.values()) == set(range(6))
    leave, _ = hb(s, "c", -1, topics=None, owned=None)
    assert leave["ErrorCode"] == E.NONE and leave["MemberEpoch"] == -1
    assert "c" not in s.groups["g"].members
    for _ in range(2):
        for m in "ab":
            r, _ = hb(s, m, epochs[m], owned=owned[m])
            epochs[m] = r["MemberEpoch"]
            if parts(r) is not None:
                owned[m] = parts(r)
    assert len(owned["a"]) == len(owned["b"]) == 3 and owned["a"] | owned["b"] == set(range(6))


def test_errors():
    s = shard()
    join(s, "a")
    assert hb(s, "zz", 1)[0]["ErrorCode"] == E.UNKNOWN_MEMBER_ID
    assert hb(s, "a", 7)[0]["ErrorCode"] == E.FENCED_MEMBER_EPOCH            # newer than the member's
    assert hb(s, "a", 1, assignor="nope")[0]["ErrorCode"] == E.UNSUPPORTED_ASSIGNOR
    assert hb(s, "x", 0, regex="(")[0]["ErrorCode"] == E.INVALID_REGULAR_EXPRESSION
    assert hb(s, "x", 0, topics=None)[0]["ErrorCode"] == E.INVALID_REQUEST            # no subscription
    assert hb(s, "x", 0, owned=None)[0]["ErrorCode"] == E.INVALID_REQUEST             # owned must be []
    assert hb(s, "", 1)[0]["ErrorCode"] == E.INVALID_REQUEST                          # no member id
    assert hb(s, "a", -3)[0]["ErrorCode"] == E.INVALID_REQUEST
    assert hb(s, "a", 1, group="")[0]["ErrorCode"] == E.INVALID_REQUEST
    assert hb(s, "a", 1, group="nogroup")[0]["ErrorCode"] == E.UNKNOWN_MEMBER_ID
    join(s, "b")
    join(s, "c")
    assert hb(s, "d", 0)[0]["ErrorCode"] == E.GROUP_MAX_SIZE_REACHED                  # consumer_max_size=3


def test_a_lost_response_is_tolerated_but_an_older_epoch_is_fenced():
    s = shard()
    join(s, "a")
    join(s, "b")
    ra, _ = hb(s, "a", 1, owned=range(6))
    kept = parts(ra)
    ra, _ = hb(s, "a", 1, owned=kept)                          # a moves to epoch 2 ...
    assert ra["MemberEpoch"] == 2
    again, _ = hb(s, "a", 1, owned=kept)                       # ... but did not hear it: previous epoch is fine
    assert again["ErrorCode"] == E.NONE and again["MemberEpoch"] == 2
    assert hb(s, "a", 1, owned=range(6))[0]["ErrorCode"] == E.FENCED_MEMBER_EPOCH   # owns more than assigned


def test_session_timeout_fences_the_member_and_the_others_take_its_partitions():
    s = shard()
    pa, _ = stable_pair(s)
    for now in (400, 800, 1200):
        hb(s, "a", 2, owned=pa, now=now)
        s.tick(now)
    group = s.groups["g"]
    assert "b" not in group.members and group.group_epoch == 3
    r, _ = hb(s, "a", 2, owned=pa, now=1300)
    assert parts(r) == set(range(6)) and r["MemberEpoch"] == 3


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced():
    s = shard()
    join(s, "a", rebalance=300)
    join(s, "b")
    hb(s, "a", 1, owned=range(6), now=0)                        # told to revoke, keeps owning them
    hb(s, "a", 1, owned=range(6), now=200)
    s.tick(200)
    assert "a" in s.groups["g"].members
    hb(s, "b", 2, owned=(), now=350)
    s.tick(350)
    assert "a" not in s.groups["g"].members


def test_partitions_added_to_a_subscribed_topic_bump_the_epoch():
    s = shard()
    join(s, "a")
    grown = TopicsView({"t": (T1, 8), "other": (T2, 2)}, version=2)
    r, _ = hb(s, "a", 1, owned=range(6), view=grown)
    assert r["MemberEpoch"] == 2 and parts(r) == set(range(8))


def test_a_new_topic_matching_the_regex_is_assigned():
    s = shard()
    r = join(s, "a", topics=None, regex="t.*")
    assert parts(r) == set(range(6))
    more = TopicsView({"t": (T1, 6), "other": (T2, 2), "tx": (b"\x03" * 16, 2)}, version=2)
    r, _ = hb(s, "a", 1, owned=range(6), topics=None, view=more)
    assert r["MemberEpoch"] == 2 and parts(r, b"\x03" * 16) == {0, 1}


def test_the_group_reloads_from_its_records():
    s = shard()
    WRITTEN.clear()
    stable_pair(s)
    s.tick(500)
    s2 = shard()
    for out in WRITTEN:
        for k, v in out.records:
            s2.replay(k, v)
    s2.loaded(0)
    g1, g2 = s.groups["g"], s2.groups["g"]
    assert (g2.group_epoch, g2.assignment_epoch) == (g1.group_epoch, g1.assignment_epoch) == (2, 2)
    assert {m: x.current for m, x in g2.members.items()} == {m: x.current for m, x in g1.members.items()}
    assert g2.targets == g1.targets and g2.subscription == g1.subscription and g2.owners == g1.owners
    r, _ = hb(s2, "a", 2, owned=g1.members["a"].current.assigned[T1])
    assert r["ErrorCode"] == E.NONE and r["MemberEpoch"] == 2


def test_the_classic_loader_skips_unknown_record_types():
    s = shard()
    s.replay(b"\x00\x63" + b"\x00\x01g", b"\x00\x00")         # key version 99: nothing, no error
    assert s.groups == {}


def test_offset_commits_use_the_member_epoch_as_generation():
    s = shard()
    join(s, "a")
    commit = {"GroupId": "g", "MemberId": "a", "GroupInstanceId": None, "version": 9,
              "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 5,
                                                       "CommittedMetadata": ""}]}]}

    def code(**kw):
        out = s.commit_offsets({**commit, **kw}, "t", 0)
        return out.answers[0][1]["Topics"][0]["Partitions"][0]["ErrorCode"]
    assert code(GenerationIdOrMemberEpoch=1) == E.NONE
    assert code(GenerationIdOrMemberEpoch=0) == E.STALE_MEMBER_EPOCH
    assert code(GenerationIdOrMemberEpoch=1, MemberId="zz") == E.UNKNOWN_MEMBER_ID
    assert code(GenerationIdOrMemberEpoch=1, version=8) == E.UNSUPPORTED_VERSION
    assert code(GenerationIdOrMemberEpoch=-1, MemberId="") == E.UNKNOWN_MEMBER_ID   # not empty


def test_static_member_leaves_with_minus_2_and_its_instance_takes_its_partitions_back():
    s = shard()
    join(s, "a", instance="i1")
    join(s, "b")
    leave, _ = hb(s, "a", -2, instance="i1", topics=None, owned=None)
    assert leave["ErrorCode"] == E.NONE and leave["MemberEpoch"] == -2
    held = set(s.groups["g"].members["a"].current.assigned[T1])
    epoch = s.groups["g"].group_epoch
    again = join(s, "a2", instance="i1")                        # no rebalance: it gets a's share at once
    assert "a" not in s.groups["g"].members and s.groups["g"].group_epoch == epoch
    assert parts(again) == set(s.groups["g"].targets["a2"][T1]) and parts(again) <= held and len(parts(again)) == 3
    assert hb(s, "a3", 0, instance="i1")[0]["ErrorCode"] == E.UNRELEASED_INSTANCE_ID


def test_list_describe_delete_and_the_classic_side():
    s = shard()
    join(s, "a")
    s.groups["old"] = ClassicGroup("old")
    listed = {g["GroupId"]: g for g in s.list_groups([], [])}
    assert listed["g"]["GroupType"] == "consumer" and listed["g"]["GroupState"] == "Stable"
    assert [g["GroupId"] for g in s.list_groups([], ["Consumer"])] == ["g"]
    d = s.describe("g", VIEW)
    assert d["ProtocolType"] == "consumer" and d["ProtocolData"] == "uniform" and len(d["Members"]) == 1
    cd = s.consumer_describe("g", VIEW)
    assert cd["Members"][0]["Assignment"]["TopicPartitions"][0]["TopicName"] == "t"
    assert s.consumer_describe("old", VIEW)["ErrorCode"] == E.GROUP_ID_NOT_FOUND
    join_classic = {"GroupId": "g", "SessionTimeoutMs": 6000, "RebalanceTimeoutMs": 6000, "MemberId": "",
                    "GroupInstanceId": None, "ProtocolType": "consumer", "Protocols": [{"Name": "range",
                    "Metadata": b""}], "client_id": "c", "client_host": "/", "version": 5}
    assert s.join(join_classic, "j", 0).answers[0][1]["ErrorCode"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert s.delete_groups(["g"], "d", 0).answers[0][1]["Results"][0]["ErrorCode"] == E.NON_EMPTY_GROUP
    hb(s, "a", -1, topics=None, owned=None)
    out = s.delete_groups(["g"], "d", 0)
    assert out.answers[0][1]["Results"][0]["ErrorCode"] == E.NONE and "g" not in s.groups
    assert len(out.records) == 3


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_server_assignor_is_chosen_by_the_members(assignor):
    s = shard()
    join(s, "a", assignor=assignor)
    assert s.consumer_describe("g", VIEW)["AssignorName"] == assignor


def test_a_group_config_sets_the_members_session_timeout_and_heartbeat_interval():
    """KIP-848 group configs (consumer.session.timeout.ms / consumer.heartbeat.interval.ms) replace
    the broker's for that group only, clamped to the broker's bounds."""
    cfg = GroupConfig(consumer_heartbeat_interval_ms=5000, consumer_session_timeout_ms=45000,
                      consumer_min_session_timeout_ms=1000, consumer_min_heartbeat_interval_ms=100)
    overrides = {"fast": {"consumer.session.timeout.ms": "2000", "consumer.heartbeat.interval.ms": "500"},
                 "clamped": {"consumer.session.timeout.ms": "10"}}
    s = GroupShard(0, cfg, random.Random(1), lambda group_id: overrides.get(group_id, {}))
    fast, _ = hb(s, member="f", group="fast")
    slow, _ = hb(s, member="s", group="slow")
    assert fast["HeartbeatIntervalMs"] == 500 and slow["HeartbeatIntervalMs"] == 5000
    s.tick(2001)
    assert not s.groups["fast"].members and "s" in s.groups["slow"].members
    assert s.group_config("clamped").consumer_session_timeout_ms == 1000


def test_the_next_deadline_is_the_earliest_session_or_revocation_and_firing_it_fences():
    """What the coordinator's per-group timer is armed for (``GroupShard.next_deadline_ms``)."""
    s = shard()
    join(s, "a", rebalance=300)
    assert s.next_deadline_ms("g") == 0 + 1000                      # a's session
    join(s, "b")
    hb(s, "a", 1, owned=range(6), now=100)                          # told to revoke: due by 100 + 300
    assert s.next_deadline_ms("g") == 400
    assert not s.tick_group("g", 399) and "a" in s.groups["g"].members
    assert s.tick_group("g", 400).records and "a" not in s.groups["g"].members
    assert s.next_deadline_ms("g") == 1000                          # b's session (joined at 0)
