"""The classic group state machine: every transition and every error (GroupShard, sans-IO)."""
import random

import pytest

from tierlog.group import GroupConfig, GroupShard, GroupState
from tierlog.group.group import ClassicGroup
from tierlog.group.log_records import GroupKey, OffsetKey, decode_key, decode_value
from tierlog.protocol.errors import ErrorCode as E

CFG = GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=100, max_session_timeout_ms=10_000,
                  max_size=3, offsets_retention_ms=1000, retention_check_interval_ms=100)


def shard(cfg=CFG):
    return GroupShard(0, cfg, random.Random(1))


def jreq(member="", version=5, instance=None, protocols=(("range", b"r"),), session=1000, rebalance=2000,
         group="g"):
    return {"GroupId": group, "SessionTimeoutMs": session, "RebalanceTimeoutMs": rebalance, "MemberId": member,
            "GroupInstanceId": instance, "ProtocolType": "consumer",
            "Protocols": [{"Name": n, "Metadata": m} for n, m in protocols],
            "client_id": "c", "client_host": "/h", "version": version}


def answers(out):
    return {tok: resp for tok, resp in out.answers}


def join_new(s, tok, now=0, **kw):
    """The two-step join: MEMBER_ID_REQUIRED, then the join with the id."""
    first = answers(s.join(jreq(**kw), tok, now))[tok]
    assert first["ErrorCode"] == E.MEMBER_ID_REQUIRED
    return first["MemberId"], s.join(jreq(member=first["MemberId"], **kw), tok, now)


def sync_req(member, gen, assignments=()):
    return {"GroupId": "g", "GenerationId": gen, "MemberId": member, "GroupInstanceId": None,
            "Assignments": [{"MemberId": m, "Assignment": a} for m, a in assignments]}


def stable_pair(s):
    """Two members in Stable at generation 2 (first joined alone, then the second)."""
    a, out = join_new(s, "a")
    resp = answers(out)["a"]
    assert resp["GenerationId"] == 1 and resp["Leader"] == a and len(resp["Members"]) == 1
    s.sync(sync_req(a, 1, [(a, b"A1")]), "sa", 0)
    b, out = join_new(s, "b")
    assert not answers(out)                                 # waits for a to rejoin
    assert s.groups["g"].state is GroupState.PREPARING_REBALANCE
    assert answers(s.heartbeat({"GroupId": "g", "GenerationId": 1, "MemberId": a}, "h", 1))["h"][
        "ErrorCode"] == E.REBALANCE_IN_PROGRESS
    out = s.join(jreq(member=a), "a2", 1)
    got = answers(out)
    assert got["a2"]["GenerationId"] == got["b"]["GenerationId"] == 2
    assert len(got["a2"]["Members"]) == 2 and got["b"]["Members"] == []
    return a, b


LEGAL = {("Empty", "PreparingRebalance"), ("Empty", "Dead"), ("PreparingRebalance", "CompletingRebalance"),
         ("PreparingRebalance", "Empty"), ("CompletingRebalance", "Stable"),
         ("CompletingRebalance", "PreparingRebalance"), ("Stable", "PreparingRebalance")}


@pytest.mark.parametrize("source", list(GroupState))
@pytest.mark.parametrize("target", list(GroupState))
def test_transition_table(source, target):
    g = ClassicGroup("x", state=source)
    if (source.value, target.value) in LEGAL:
        g.transition(target, 5)
        assert g.state is target and g.state_timestamp_ms == 5
    else:
        with pytest.raises(AssertionError):
            g.transition(target, 5)


def test_sync_errors_during_a_rebalance_and_follower_rejoin_in_stable():
    s = shard()
    a, b = stable_pair(s)
    s.sync(sync_req(b, 2), "sb", 2)
    out = s.sync(sync_req(a, 2, [(a, b"A"), (b, b"B")]), "sa", 2)
    mismatch = {**sync_req(b, 2), "ProtocolType": "connect"}
    assert answers(s.sync(mismatch, "x", 3))["x"]["ErrorCode"] == E.INCONSISTENT_GROUP_PROTOCOL
    rejoin = answers(s.join(jreq(member=b), "jb", 3))["jb"]          # a follower, same protocols: no rebalance
    assert rejoin["GenerationId"] == 2 and rejoin["Members"] == [] and s.groups["g"].state is GroupState.STABLE
    s.join(jreq(member=a), "ja", 4)                                  # the leader rejoins: rebalance
    assert s.groups["g"].state is GroupState.PREPARING_REBALANCE
    assert answers(s.sync(sync_req(b, 2), "x", 4))["x"]["ErrorCode"] == E.REBALANCE_IN_PROGRESS
    assert out.records


def test_join_sync_heartbeat_happy_path_stores_the_assignment():
    s = shard()
    a, b = stable_pair(s)
    assert s.groups["g"].state is GroupState.COMPLETING_REBALANCE
    out = s.sync(sync_req(b, 2), "sb", 2)
    assert not out.answers                                 # the follower waits for the leader
    out = s.sync(sync_req(a, 2, [(a, b"A"), (b, b"B")]), "sa", 2)
    got = answers(out)
    assert got["sa"]["Assignment"] == b"A" and got["sb"]["Assignment"] == b"B"
    assert s.groups["g"].state is GroupState.STABLE
    (key, value), = out.records                            # answered once this record is committed
    stored = decode_value(decode_key(key), value)
    assert stored["generation"] == 2 and {m["memberId"]: m["assignment"] for m in stored["members"]} == {
        a: b"A", b: b"B"}
    hb = answers(s.heartbeat({"GroupId": "g", "GenerationId": 2, "MemberId": b}, "h", 3))
    assert hb["h"]["ErrorCode"] == E.NONE
    assert answers(s.sync(sync_req(b, 2), "again", 3))["again"]["Assignment"] == b"B"


def test_heartbeat_and_sync_errors():
    s = shard()
    a, _b = stable_pair(s)
    def hb(m, gen):
        return answers(s.heartbeat({"GroupId": "g", "GenerationId": gen, "MemberId": m}, "h", 3))["h"]["ErrorCode"]

    assert hb("nobody", 2) == E.UNKNOWN_MEMBER_ID
    assert hb(a, 1) == E.ILLEGAL_GENERATION
    assert answers(s.heartbeat({"GroupId": "other", "GenerationId": 0, "MemberId": a}, "h", 3))["h"][
        "ErrorCode"] == E.UNKNOWN_MEMBER_ID
    assert answers(s.sync(sync_req(a, 1), "x", 3))["x"]["ErrorCode"] == E.ILLEGAL_GENERATION
    assert answers(s.sync(sync_req("zz", 2), "x", 3))["x"]["ErrorCode"] == E.UNKNOWN_MEMBER_ID


def test_join_errors():
    s = shard()
    assert answers(s.join(jreq(session=50), "t", 0))["t"]["ErrorCode"] == E.INVALID_SESSION_TIMEOUT
    assert answers(s.join(jreq(session=20_000), "t", 0))["t"]["ErrorCode"] == E.INVALID_SESSION_TIMEOUT
    assert answers(s.join(jreq(member="ghost"), "t", 0))["t"]["ErrorCode"] == E.UNKNOWN_MEMBER_ID
    assert answers(s.join(jreq(group=""), "t", 0))["t"]["ErrorCode"] == E.INVALID_GROUP_ID
    assert "g" not in s.groups
    _a, _ = join_new(s, "a")
    assert answers(s.join(jreq(protocols=(("other", b""),)), "t", 0))["t"][
        "ErrorCode"] == E.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size_counts_pending_members():
    s = shard()
    join_new(s, "a")
    s.join(jreq(), "b", 0)
    s.join(jreq(), "c", 0)
    assert answers(s.join(jreq(), "d", 0))["d"]["ErrorCode"] == E.GROUP_MAX_SIZE_REACHED


def test_v3_join_needs_no_member_id_round_trip():
    s = shard()
    resp = answers(s.join(jreq(version=3), "t", 0))["t"]
    assert resp["ErrorCode"] == E.NONE and resp["GenerationId"] == 1 and resp["MemberId"].startswith("c-")


def test_leave_rebalances_and_last_leave_empties_the_group():
    s = shard()
    a, b = stable_pair(s)
    s.sync(sync_req(a, 2, [(a, b"A"), (b, b"B")]), "sa", 2)
    out = s.leave("g", [(b, None), ("ghost", None)], "l", 3)
    assert [m["ErrorCode"] for m in answers(out)["l"]["Members"]] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert s.groups["g"].state is GroupState.PREPARING_REBALANCE
    got = answers(s.join(jreq(member=a), "a3", 4))
    assert got["a3"]["GenerationId"] == 3 and [m["MemberId"] for m in got["a3"]["Members"]] == [a]
    s.sync(sync_req(a, 3, [(a, b"A")]), "sa", 4)
    out = s.leave("g", [(a, None)], "l", 5)
    assert s.groups["g"].state is GroupState.EMPTY and s.groups["g"].generation == 4
    (key, value), = out.records                          # the empty group is stored
    assert decode_value(decode_key(key), value)["members"] == []
    assert answers(s.leave("nope", [(a, None)], "l", 5))["l"]["ErrorCode"] == E.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_a_silent_member():
    s = shard()
    a, b = stable_pair(s)
    s.sync(sync_req(b, 2), "sb", 2)
    s.sync(sync_req(a, 2, [(a, b"A"), (b, b"B")]), "sa", 2)
    s.heartbeat({"GroupId": "g", "GenerationId": 2, "MemberId": a}, "h", 900)
    s.tick(1003)                                          # b's session (1000 ms from its sync at 2) ended
    g = s.groups["g"]
    assert b not in g.members and g.state is GroupState.PREPARING_REBALANCE
    assert answers(s.join(jreq(member=a), "j", 1004))["j"]["GenerationId"] == 3


def test_rebalance_timeout_drops_members_that_did_not_rejoin():
    s = shard()
    a, b = stable_pair(s)
    s.sync(sync_req(a, 2, [(a, b"A"), (b, b"B")]), "sa", 2)
    s.join(jreq(member=a, protocols=(("range", b"new"),)), "ja", 3)      # a changed: rebalance
    assert s.groups["g"].state is GroupState.PREPARING_REBALANCE
    s.heartbeat({"GroupId": "g", "GenerationId": 2, "MemberId": b}, "h", 1000)
    outs = s.tick(2004)                                  # rebalance timeout 2000 ms
    got = {tok: r for o in outs for tok, r in o.answers}
    assert got["ja"]["GenerationId"] == 3 and list(s.groups["g"].members) == [a]


def test_sync_timeout_removes_members_that_did_not_sync():
    s = shard()
    a, b = stable_pair(s)
    s.sync(sync_req(b, 2), "sb", 2)
    outs = s.tick(2002)                                  # the leader never synced
    got = {tok: r for o in outs for tok, r in o.answers}
    assert a not in s.groups["g"].members and got["sb"]["ErrorCode"] == E.REBALANCE_IN_PROGRESS


def test_initial_rebalance_delay_waits_and_extends():
    cfg = GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=100, max_session_timeout_ms=10_000)
    s = shard(cfg)
    _a, out = join_new(s, "a")
    assert not out.answers and s.groups["g"].state is GroupState.PREPARING_REBALANCE
    _b, _ = join_new(s, "b", now=50)
    assert not [o for o in s.tick(100) if o.answers]      # b arrived during the delay: extended
    got = {tok: r for o in s.tick(200) for tok, r in o.answers}
    assert got["a"]["GenerationId"] == got["b"]["GenerationId"] == 1


def test_static_member_restart_keeps_generation_and_fences_old_id():
    s = shard()
    first = answers(s.join(jreq(instance="i1"), "a", 0))["a"]          # static: no MEMBER_ID_REQUIRED
    old = first["MemberId"]
    assert first["ErrorCode"] == E.NONE and first["GenerationId"] == 1
    s.sync(sync_req(old, 1, [(old, b"A")]), "sa", 0)
    out = s.join(jreq(instance="i1"), "again", 10)                     # restarted, same protocols
    resp = answers(out)["again"]
    assert resp["ErrorCode"] == E.NONE and resp["GenerationId"] == 1 and resp["MemberId"] != old
    assert resp["Leader"] == old                                        # not told it leads: no rebalance
    assert s.groups["g"].state is GroupState.STABLE and out.records    # the new id is stored first
    assert answers(s.sync(sync_req(resp["MemberId"], 1), "s", 11))["s"]["Assignment"] == b"A"
    hb = {"GroupId": "g", "GenerationId": 1, "MemberId": old, "GroupInstanceId": "i1"}
    assert answers(s.heartbeat(hb, "h", 12))["h"]["ErrorCode"] == E.FENCED_INSTANCE_ID
    assert answers(s.leave("g", [(old, "i1")], "l", 12))["l"]["Members"][0]["ErrorCode"] == E.FENCED_INSTANCE_ID


def test_static_member_with_changed_protocols_rebalances():
    s = shard()
    old = answers(s.join(jreq(instance="i1"), "a", 0))["a"]["MemberId"]
    s.sync(sync_req(old, 1, [(old, b"A")]), "sa", 0)
    resp = answers(s.join(jreq(instance="i1", protocols=(("rr", b""), ("range", b"x"))), "j", 5))["j"]
    assert resp["GenerationId"] == 2 and s.groups["g"].state is GroupState.COMPLETING_REBALANCE


def test_offset_commit_checks_and_fetch_after_commit():
    s = shard()
    simple = {"GroupId": "solo", "GenerationIdOrMemberEpoch": -1, "MemberId": "",
              "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 5,
                                                        "CommittedMetadata": "x"}]}]}
    out = s.commit_offsets(simple, "c", 10)
    assert answers(out)["c"]["Topics"][0]["Partitions"][0]["ErrorCode"] == E.NONE and len(out.records) == 1
    assert s.fetch_offsets("solo", None)["Topics"] == []              # not visible before it is committed
    s.apply_committed(out.on_commit)
    assert s.fetch_offsets("solo", None)["Topics"][0]["Partitions"][0]["CommittedOffset"] == 5
    a, b = stable_pair(s)
    def req(gen, member):
        return {"GroupId": "g", "GenerationIdOrMemberEpoch": gen, "MemberId": member, "Topics": simple["Topics"]}

    def code(o):
        return answers(o)["c"]["Topics"][0]["Partitions"][0]["ErrorCode"]

    assert code(s.commit_offsets(req(2, a), "c", 3)) == E.REBALANCE_IN_PROGRESS       # CompletingRebalance
    s.sync(sync_req(a, 2, [(a, b"A"), (b, b"B")]), "sa", 3)
    assert code(s.commit_offsets(req(1, a), "c", 3)) == E.ILLEGAL_GENERATION
    assert code(s.commit_offsets(req(2, "x"), "c", 3)) == E.UNKNOWN_MEMBER_ID
    assert code(s.commit_offsets(req(-1, ""), "c", 3)) == E.UNKNOWN_MEMBER_ID          # group has members
    assert code(s.commit_offsets(req(2, a), "c", 3)) == E.NONE
    assert code(s.commit_offsets({**req(5, a), "GroupId": "new"}, "c", 3)) == E.ILLEGAL_GENERATION
    big = {**simple, "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 1, "CommittedOffset": 1,
                                                               "CommittedMetadata": "x" * 5000}]}]}
    assert code(s.commit_offsets(big, "c", 3)) == E.OFFSET_METADATA_TOO_LARGE


def test_delete_groups_offset_delete_and_expiry():
    s = shard()
    commit = {"GroupId": "solo", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "Topics": [
        {"Name": "t", "Partitions": [{"PartitionIndex": p, "CommittedOffset": 1, "CommittedMetadata": None}
                                     for p in (0, 1)]}]}
    s.apply_committed(s.commit_offsets(commit, "c", 0).on_commit)
    out = s.delete_offsets("solo", [{"Name": "t", "Partitions": [{"PartitionIndex": 0}]}], "d", 1)
    assert answers(out)["d"]["ErrorCode"] == E.NONE and out.records[0][1] is None
    assert [p["PartitionIndex"] for p in s.fetch_offsets("solo", None)["Topics"][0]["Partitions"]] == [1]
    assert answers(s.delete_offsets("nope", [], "d", 1))["d"]["ErrorCode"] == E.GROUP_ID_NOT_FOUND
    _a, _b = stable_pair(s)
    res = answers(s.delete_groups(["g", "nope", "solo"], "x", 2))["x"]["Results"]
    assert [r["ErrorCode"] for r in res] == [E.NON_EMPTY_GROUP, E.GROUP_ID_NOT_FOUND, E.NONE]
    assert "solo" not in s.groups
    s.apply_committed(s.commit_offsets({**commit, "GroupId": "old"}, "c", 0).on_commit)
    s.loaded(0)
    outs = s.tick(2000)                                        # retention 1000 ms passed: expired
    assert "old" not in s.groups and any(r[1] is None for o in outs for r in o.records)


def test_a_deleted_topics_offsets_leave_every_group_in_tombstones():
    s = shard()

    def commit(group, topics):
        return {"GroupId": group, "GenerationIdOrMemberEpoch": -1, "MemberId": "", "Topics": [
            {"Name": t, "Partitions": [{"PartitionIndex": p, "CommittedOffset": 7, "CommittedMetadata": None}
                                       for p in (0, 1)]} for t in topics]}
    s.apply_committed(s.commit_offsets(commit("both", ["gone", "kept"]), "c", 0).on_commit)
    s.apply_committed(s.commit_offsets(commit("only", ["gone"]), "c", 0).on_commit)
    out = s.delete_topic_offsets({"gone"}, 1)
    tombstones = [decode_key(k) for k, v in out.records if v is None]
    assert {(k.group, k.topic, k.partition) for k in tombstones if isinstance(k, OffsetKey)} == {
        (g, "gone", p) for g in ("both", "only") for p in (0, 1)}
    assert [t["Name"] for t in s.fetch_offsets("both", None)["Topics"]] == ["kept"]
    assert "only" not in s.groups, "an empty group left without offsets is deleted, as expiry does"
    assert GroupKey("only") in [decode_key(k) for k, v in out.records if v is None]
    reloaded = shard()
    for k, v in [*s.commit_offsets(commit("both", ["gone"]), "c", 0).records, *out.records]:
        reloaded.replay(k, v)
    assert reloaded.fetch_offsets("both", [{"Name": "gone", "PartitionIndexes": [0]}])["Topics"][0][
        "Partitions"][0]["CommittedOffset"] == -1, "the tombstones win on load"
    assert not s.delete_topic_offsets({"never"}, 2)


def test_subscribed_topic_offsets_cannot_be_deleted():
    s = shard()
    sub = b"\x00\x00" + (1).to_bytes(4, "big") + (1).to_bytes(2, "big") + b"t" + b"\xff\xff\xff\xff"
    resp = answers(s.join(jreq(version=3, protocols=(("range", sub),)), "a", 0))["a"]
    s.sync(sync_req(resp["MemberId"], 1, [(resp["MemberId"], b"")]), "s", 0)
    out = s.delete_offsets("g", [{"Name": "t", "Partitions": [{"PartitionIndex": 0}]},
                                 {"Name": "u", "Partitions": [{"PartitionIndex": 0}]}], "d", 1)
    codes = [t["Partitions"][0]["ErrorCode"] for t in answers(out)["d"]["Topics"]]
    assert codes == [E.GROUP_SUBSCRIBED_TO_TOPIC, E.NONE]


def test_list_describe_and_reload_from_records():
    s = shard()
    a, b = stable_pair(s)
    out = s.sync(sync_req(a, 2, [(a, b"A"), (b, b"B")]), "sa", 2)
    assert s.list_groups(["stable"], []) == [{"GroupId": "g", "ProtocolType": "consumer", "GroupState": "Stable",
                                              "GroupType": "classic"}]
    assert s.list_groups(["Empty"], []) == [] and s.list_groups([], ["consumer"]) == []
    d = s.describe("g")
    assert d["GroupState"] == "Stable" and d["ProtocolData"] == "range" and len(d["Members"]) == 2
    assert s.describe("none")["GroupState"] == "Dead"
    loaded = shard()
    for key, value in out.records:
        loaded.replay(key, value)
    loaded.loaded(100)
    g = loaded.groups["g"]
    assert g.state is GroupState.STABLE and g.generation == 2 and g.leader_id == a
    assert answers(loaded.heartbeat({"GroupId": "g", "GenerationId": 2, "MemberId": b}, "h", 101))["h"][
        "ErrorCode"] == E.NONE
    loaded.replay(*out.records[0][:1], None)
    assert "g" not in loaded.groups and isinstance(decode_key(out.records[0][0]), GroupKey)


def test_offsets_of_a_group_known_only_from_the_log_expire():
    from tierlog.group.log_records import OffsetKey, offset_commit_record
    s = shard()
    s.replay(*offset_commit_record(OffsetKey("simple", "t", 0), {
        "offset": 3, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 50, "expireTimestamp": -1}))
    s.loaded(100)
    assert s.list_groups([], []) == [{"GroupId": "simple", "ProtocolType": "", "GroupState": "Empty",
                                      "GroupType": "classic"}]
    assert not [r for o in s.tick(1000) for r in o.records]        # committed at 50: due at 1050
    outs = s.tick(1100)
    assert "simple" not in s.groups and len([r for o in outs for r in o.records]) == 2   # offset + group tombstones


def test_last_leave_inside_the_initial_delay_empties_the_group_at_once():
    """Kafka's removeMemberAndUpdateClassicGroup: a removal that leaves every member joined ends the
    join phase at once, initial delay or not (so DeleteGroups right after the leave succeeds)."""
    cfg = GroupConfig(initial_rebalance_delay_ms=5000, min_session_timeout_ms=100, max_session_timeout_ms=10_000)
    s = shard(cfg)
    a, out = join_new(s, "a")
    _b, out = join_new(s, "b", now=10)
    assert s.groups["g"].state is GroupState.PREPARING_REBALANCE and not out.answers
    got = answers(s.leave("g", [(a, None)], "la", 20))
    assert got["la"]["Members"][0]["ErrorCode"] == E.NONE and got["a"]["ErrorCode"] == E.UNKNOWN_MEMBER_ID
    assert got["b"]["ErrorCode"] == E.NONE and got["b"]["GenerationId"] == 1       # b alone, joined: at once
    s2 = shard(cfg)
    a, _ = join_new(s2, "a")
    got = answers(s2.leave("g", [(a, None)], "la", 20))
    assert got["a"]["ErrorCode"] == E.UNKNOWN_MEMBER_ID and s2.groups["g"].state is GroupState.EMPTY
    assert answers(s2.delete_groups(["g"], "d", 21))["d"]["Results"][0]["ErrorCode"] == E.NONE


def test_the_next_deadline_is_the_earliest_timeout_and_firing_it_expires_the_member():
    """What the coordinator's per-group timer is armed for (``GroupShard.next_deadline_ms``)."""
    s = shard()
    assert s.next_deadline_ms("g") is None                          # no such group
    a, b = stable_pair(s)
    assert s.next_deadline_ms("g") == 1 + 1000                      # the sessions restarted when the join ended
    s.sync(sync_req(b, 2), "sb", 2)
    s.sync(sync_req(a, 2, [(a, b"A"), (b, b"B")]), "sa", 2)
    s.heartbeat({"GroupId": "g", "GenerationId": 2, "MemberId": a}, "h", 900)
    assert s.next_deadline_ms("g") == 2 + 1000                      # b's session; Stable has no phase deadline
    assert not s.tick_group("g", 1001) and b in s.groups["g"].members
    s.tick_group("g", 1002)                                         # due at its deadline exactly
    assert b not in s.groups["g"].members and s.next_deadline_ms("g") == 900 + 1000     # a's session
    s.leave("g", [(a, None)], "l", 1003)
    assert s.groups["g"].state is GroupState.EMPTY and s.next_deadline_ms("g") is None
