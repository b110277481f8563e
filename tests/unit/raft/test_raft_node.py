"""RaftNode behaviour: elections, vote rules, replication, parked fetches, resign, check-quorum."""

import random

import pytest
from raft_harness import FAST, Cluster, Recorder, listened_node

from tierlog.raft import (
    Err,
    FetchRequest,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    NotLeaderError,
    OffsetAndEpoch,
    RaftNode,
    VoteRequest,
)
from tierlog.raft.state import Candidate, Unattached


def _single(node_id=1, voters=frozenset({1, 2, 3}), log=None, config=FAST):
    rec = Recorder()
    node = listened_node(node_id, voters, log or MemoryLog(), MemorySnapshotStore(), MemoryQuorumStateStore(), config,
                         random.Random(3), rec, 0)
    return node, rec


def test_single_voter_elects_itself_and_commits():
    c = Cluster(voters=1)
    leader = c.elect()
    rec = c.listeners[1]
    last = c.commit([b"1", b"2"])
    assert last == 2 and leader.high_watermark == 3  # offset 0 is the LeaderChange record
    assert rec.commits[0].control and rec.commits[0].records == []
    assert rec.values() == [b"1", b"2"]
    assert rec.leaders[-1].leader_id == 1


def test_three_voters_and_an_observer_replicate():
    c = Cluster(voters=3, observers=1)
    leader = c.elect()
    c.commit([b"a"])
    c.commit([b"b", b"c"])
    for i in c.ids:
        assert c.listeners[i].values() == [b"a", b"b", b"c"]
    info = leader.describe(c.now)
    assert info.error == Err.NONE and [r.replica_id for r in info.voters] == [1, 2, 3]
    assert [r.replica_id for r in info.observers] == [4]
    assert all(r.log_end_offset == leader.log.end_offset for r in info.voters)


def test_propose_on_a_follower_raises():
    c = Cluster()
    leader = c.elect()
    follower = next(n for n in c.nodes.values() if n is not leader)
    with pytest.raises(NotLeaderError) as e:
        follower.propose([b"x"], c.now)
    assert e.value.leader.leader_id == leader.node_id


def test_leader_change_reaches_state_machine_only_once_caught_up():
    c = Cluster()
    leader = c.elect()
    rec = c.listeners[leader.node_id]
    assert rec.leaders[-1].leader_id == leader.node_id
    # by then the LeaderChange record of its epoch has been committed and delivered
    assert rec.commits and rec.commits[-1].epoch == leader.epoch


# ---------------------------------------------------------------- vote rules

def test_vote_granted_once_per_epoch_to_an_up_to_date_candidate():
    node, _ = _single()
    outcome = node.handle_request(2, VoteRequest("t", 1, 2, 0, 0), 0)
    assert outcome.response.vote_granted and outcome.response.leader_epoch == 1
    assert outcome.output.quorum_state.voted_id == 2  # to persist before the answer is sent
    assert node.handle_request(2, VoteRequest("t", 1, 2, 0, 0), 0).response.vote_granted  # same candidate again
    assert not node.handle_request(3, VoteRequest("t", 1, 3, 0, 0), 0).response.vote_granted


def test_vote_rejected_for_a_stale_log():
    log = MemoryLog()
    log.append_as_leader([b"a"], 3, 0)
    node, _ = _single(log=log)
    assert not node.handle_request(2, VoteRequest("t", 5, 2, 2, 10), 0).response.vote_granted
    assert not node.handle_request(3, VoteRequest("t", 5, 3, 3, 0), 0).response.vote_granted
    assert node.handle_request(3, VoteRequest("t", 6, 3, 3, 1), 0).response.vote_granted


def test_vote_errors():
    node, _ = _single()
    assert node.handle_request(2, VoteRequest("other", 1, 2, 0, 0), 0).response.error == Err.INCONSISTENT_CLUSTER_ID
    assert node.handle_request(9, VoteRequest("t", 1, 9, 0, 0), 0).response.error == Err.INCONSISTENT_VOTER_SET
    node.handle_request(2, VoteRequest("t", 4, 2, 0, 0), 0)
    r = node.handle_request(3, VoteRequest("t", 3, 3, 0, 0), 0).response
    assert r.error == Err.FENCED_LEADER_EPOCH and r.leader_epoch == 4 and not r.vote_granted


def test_incomplete_snapshot_stands_as_an_empty_log_but_votes_with_what_it_holds():
    log = MemoryLog()
    for _ in range(5):
        log.append_as_leader([b"a"], 3, 0)
    node, _ = _single(log=log)
    # without a snapshot download, a shorter log loses
    assert not node.handle_request(2, VoteRequest("t", 5, 2, 1, 1), 0).response.vote_granted
    # while downloading, it still holds its log (it may have helped commit it): a candidate
    # behind the log or the snapshot loses, one at the snapshot wins
    assert node.snapshot_fetcher.start(OffsetAndEpoch(100, 4))
    assert not node.handle_request(3, VoteRequest("t", 6, 3, 1, 1), 0).response.vote_granted
    assert not node.handle_request(3, VoteRequest("t", 7, 3, 3, 50), 0).response.vote_granted
    assert node.handle_request(3, VoteRequest("t", 8, 3, 4, 100), 0).response.vote_granted
    # and as a candidate it advertises an empty log: LastOffsetEpoch -1, LastOffset -1
    node2, _ = _single(log=log)
    assert node2.snapshot_fetcher.start(OffsetAndEpoch(100, 4))
    out = node2.tick(5000)
    votes = [r for _, r in out.sends if isinstance(r, VoteRequest)]
    assert votes and all((v.last_offset_epoch, v.last_offset) == (-1, -1) for v in votes)


def test_higher_epoch_vote_makes_the_leader_step_down():
    c = Cluster()
    leader = c.elect()
    other = next(i for i in c.ids if i != leader.node_id)
    last = leader.log.end_offset
    r = leader.handle_request(other, VoteRequest("t", leader.epoch + 1, other, 99, last + 10), c.now).response
    assert r.vote_granted and isinstance(leader.quorum.state, Unattached)


def test_candidate_backs_off_after_rejection_and_retries_with_next_epoch():
    node, _ = _single()
    out = node.tick(5000)
    s = node.quorum.state
    assert isinstance(s, Candidate) and s.epoch == 1
    req = next(r for d, r in out.sends if d == 2)
    node.handle_response(2, req, type(_vote_resp())(0, -1, 1, False), 5000)
    req3 = next(r for d, r in out.sends if d == 3)
    node.handle_response(3, req3, type(_vote_resp())(0, -1, 1, False), 5000)
    assert s.backoff_until_ms is not None and s.backoff_until_ms <= 5000 + FAST.election_backoff_max_ms
    node.tick(s.backoff_until_ms)
    assert isinstance(node.quorum.state, Candidate) and node.epoch == 2 and node.quorum.state.retries == 2


def _vote_resp():
    from tierlog.raft import VoteResponse
    return VoteResponse(0, -1, 0, False)


# ---------------------------------------------------------------- fetch

def test_leader_parks_an_empty_fetch_and_answers_it_when_data_arrives():
    c = Cluster()
    leader = c.elect()
    c.deliver()
    req = FetchRequest("t", 9, leader.epoch, leader.log.end_offset, leader.log.last_fetched_epoch(), 0, 50, 1 << 20)
    outcome = leader.handle_request(9, req, c.now)
    assert outcome.response is None and outcome.token is not None
    leader.propose([b"x"], c.now)
    out = leader.tick(c.now)
    answered = dict(out.responses)
    assert outcome.token in answered and answered[outcome.token].batches[0].records == (b"x",)


def test_leader_answers_at_once_a_replica_behind_on_the_high_watermark():
    # KIP-1166: a caught-up replica that does not know the current high watermark
    # is answered at once, not after its max wait
    c = Cluster()
    leader = c.elect()
    c.deliver()
    end, hw = leader.log.end_offset, leader.high_watermark
    behind = FetchRequest("t", 9, leader.epoch, end, leader.log.last_fetched_epoch(), 0, 500, 1 << 20, hw - 1)
    out = leader.handle_request(9, behind, c.now)
    assert out.token is None and out.response.high_watermark == hw and out.response.batches == ()
    knows = FetchRequest("t", 9, leader.epoch, end, leader.log.last_fetched_epoch(), 0, 500, 1 << 20, hw)
    assert leader.handle_request(9, knows, c.now).token is not None


def test_followers_learn_a_new_high_watermark_without_waiting_out_their_fetch():
    # the last voter and the observer fetch again after the high watermark moved:
    # their fetches carry the old high watermark and are answered at once
    c = Cluster(voters=3, observers=1)
    c.elect()
    c.commit([b"a"])
    start = c.now
    c.commit([b"b"])
    assert c.now - start < FAST.fetch_max_wait_ms
    for i in c.ids:
        assert c.listeners[i].values() == [b"a", b"b"]


def test_parked_fetch_expires_after_max_wait():
    c = Cluster()
    leader = c.elect()
    c.deliver()
    req = FetchRequest("t", 9, leader.epoch, leader.log.end_offset, leader.log.last_fetched_epoch(), 0, 30, 1 << 20)
    token = leader.handle_request(9, req, c.now).token
    assert leader.tick(c.now + 29).responses == [] or token not in dict(leader.tick(c.now + 29).responses)
    resp = dict(leader.tick(c.now + 30).responses)[token]
    assert resp.error == Err.NONE and resp.batches == ()


def test_fetch_errors_name_the_leader():
    c = Cluster()
    leader = c.elect()
    follower = next(n for n in c.nodes.values() if n is not leader)
    r = follower.handle_request(9, FetchRequest("t", 9, leader.epoch, 0, 0, 0, 0, 100), c.now).response
    assert r.error == Err.NOT_LEADER_OR_FOLLOWER and r.leader_id == leader.node_id
    r = leader.handle_request(9, FetchRequest("t", 9, leader.epoch - 1, 0, 0, 0, 0, 100), c.now).response
    assert r.error == Err.FENCED_LEADER_EPOCH
    r = leader.handle_request(9, FetchRequest("t", 9, leader.epoch + 1, 0, 0, 0, 0, 100), c.now).response
    assert r.error == Err.UNKNOWN_LEADER_EPOCH
    r = leader.handle_request(9, FetchRequest("x", 9, leader.epoch, 0, 0, 0, 0, 100), c.now).response
    assert r.error == Err.INCONSISTENT_CLUSTER_ID


# ---------------------------------------------------------------- resign and check-quorum

def test_resign_sends_end_quorum_epoch_and_a_successor_takes_over_fast():
    c = Cluster()
    leader = c.elect()
    c.commit([b"1"])
    old_epoch = leader.epoch
    out = leader.resign(c.now)
    assert leader.state_name == "resigned"
    ends = [(d, r) for d, r in out.sends if type(r).__name__ == "EndQuorumEpochRequest"]
    assert sorted(d for d, _ in ends) == sorted(i for i in c.ids if i != leader.node_id)
    assert all(r.preferred_successors for _, r in ends)
    c.apply(leader.node_id, out)
    started = c.now
    c.run_until(lambda: c.leader() is not None and c.leader().epoch > old_epoch)
    assert c.now - started < FAST.fetch_timeout_ms  # no need to wait for a fetch timeout


def test_check_quorum_makes_an_isolated_leader_resign():
    c = Cluster()
    leader = c.elect()
    for i in c.ids:
        if i != leader.node_id:
            c.stop(i)
    c.run_until(lambda: leader.state_name != "leader", max_ms=FAST.check_quorum_timeout_ms + 50)
    assert leader.state_name in ("resigned", "candidate")


def test_follower_without_leader_becomes_candidate_after_fetch_timeout():
    c = Cluster()
    leader = c.elect()
    c.stop(leader.node_id)
    epoch = leader.epoch
    c.run_until(lambda: any(n.epoch > epoch for i, n in c.nodes.items() if i not in c.down), max_ms=400)
    c.run_until(lambda: c.leader() is not None and c.leader().epoch > epoch)


def test_output_says_what_to_persist_and_the_leader_counts_only_flushed_appends():
    log, store = MemoryLog(), MemoryQuorumStateStore()
    node = RaftNode(1, frozenset({1}), log, MemorySnapshotStore(), store, FAST, random.Random(3), 0)
    out = node.tick(5000)  # a single voter elects itself at its election timeout
    assert node.is_leader and out.quorum_state.leader_id == 1 and out.flush_log_to == log.end_offset
    assert store.state is None  # the shell writes it, not the node
    assert node.high_watermark == 0
    last = node.propose([b"a"], 5000)
    out = node.tick(5000 + FAST.append_linger_ms)
    assert out.flush_log_to == last + 1 and out.quorum_state is None and node.high_watermark == 0
    log.flush()
    node.handle_log_flushed(5000 + FAST.append_linger_ms)
    assert node.high_watermark == last + 1
