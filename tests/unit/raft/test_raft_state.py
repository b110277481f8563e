"""Election state transitions (raft/state.py): every legal one works, illegal ones assert."""

import random

import pytest

from tierlog.raft.leader import LeaderProgress
from tierlog.raft.quorum_store import ElectionState, MemoryQuorumStateStore
from tierlog.raft.state import (
    Candidate,
    Follower,
    Leader,
    QuorumState,
    Resigned,
    Unattached,
)
from tierlog.raft.types import RaftConfig

VOTERS = frozenset({1, 2, 3})


def _qs(node_id=1, persisted=None, voters=VOTERS):
    store = MemoryQuorumStateStore()
    if persisted is not None:
        store.write(persisted)
    return QuorumState(node_id, voters, store, RaftConfig(), random.Random(1), 0), store


def _progress(qs):
    return LeaderProgress(qs.node_id, qs.voters, 0, 0, qs.config, 0)


def _leader(qs):
    qs.to_candidate(0)
    qs.record_vote(2, True)
    qs.record_vote(3, True)
    qs.to_leader(0, _progress(qs))
    return qs.state


def test_fresh_start_is_unattached_epoch_zero():
    qs, _ = _qs()
    assert isinstance(qs.state, Unattached) and qs.epoch == 0
    assert 1000 <= qs.state.election_deadline_ms < 2000  # randomized from the injected rng


def test_restart_from_persisted_states():
    assert isinstance(_qs(1, ElectionState(4, leader_id=1))[0].state, Resigned)
    f = _qs(1, ElectionState(4, leader_id=2))[0].state
    assert isinstance(f, Follower) and f.leader_id == 2 and f.epoch == 4
    assert isinstance(_qs(1, ElectionState(4, voted_id=1))[0].state, Candidate)
    u = _qs(1, ElectionState(4, voted_id=3))[0].state
    assert isinstance(u, Unattached) and u.voted_id == 3


def test_every_transition_hands_out_the_state_to_persist_once():
    qs, store = _qs()
    assert qs.take_unpersisted() is None
    qs.to_candidate(0)
    assert qs.take_unpersisted() == ElectionState(1, voted_id=1) and qs.take_unpersisted() is None
    qs.to_unattached(3, 0)
    qs.to_voted(2, 0)
    assert qs.take_unpersisted() == ElectionState(3, voted_id=2)  # the latest wins
    qs.to_follower(3, 2, 0)
    assert qs.take_unpersisted() == ElectionState(3, leader_id=2, voted_id=2)
    assert store.writes == 0  # writing is the shell's job


def test_every_legal_transition():
    qs, _ = _qs()
    qs.to_unattached(1, 0)            # unattached -> unattached (higher)
    qs.to_voted(2, 0)                 # unattached -> unattached (same, vote)
    qs.to_follower(1, 2, 0)           # unattached -> follower (same)
    qs.to_follower(2, 3, 0)           # follower -> follower (higher)
    qs.to_unattached(3, 0)            # follower -> unattached (higher)
    qs.to_candidate(0)                # unattached -> candidate (next)
    qs.to_candidate(0)                # candidate -> candidate (next)
    qs.to_unattached(9, 0)            # candidate -> unattached (higher)
    qs.to_follower(10, 2, 0)          # unattached -> follower (higher)
    qs.to_candidate(0)                # follower -> candidate (next)
    qs.to_follower(11, 3, 0)          # candidate -> follower (same)
    qs.to_candidate(0)
    _leader_state = _leader_from_candidate(qs)  # candidate -> leader (same)
    qs.to_resigned((2, 3), 0)         # leader -> resigned (same)
    qs.to_candidate(0)                # resigned -> candidate (next)
    _leader_from_candidate(qs)
    qs.to_follower(20, 2, 0)          # leader -> follower (higher)
    qs.to_candidate(0)
    _leader_from_candidate(qs)
    qs.to_unattached(30, 0)           # leader -> unattached (higher)
    qs.to_candidate(0)
    _leader_from_candidate(qs)
    qs.to_resigned((), 0)
    qs.to_unattached(40, 0)           # resigned -> unattached (higher)
    qs.to_candidate(0)
    _leader_from_candidate(qs)
    qs.to_resigned((), 0)
    qs.to_follower(50, 3, 0)          # resigned -> follower (higher)
    assert qs.epoch == 50
    assert _leader_state is not None


def _leader_from_candidate(qs):
    qs.record_vote(2, True)
    qs.record_vote(3, True)
    return qs.to_leader(0, _progress(qs))


@pytest.mark.parametrize("bad", [
    lambda qs: qs.to_unattached(0, 0),                    # same epoch, no vote
    lambda qs: qs.to_follower(0, 1, 0),                   # follow itself
    lambda qs: qs.to_resigned((), 0),                     # resign without leading
    lambda qs: qs.to_leader(0, _progress(qs)),            # lead without a majority
])
def test_illegal_transitions_assert(bad):
    qs, _ = _qs()
    with pytest.raises(AssertionError):
        bad(qs)


def test_same_epoch_follower_to_follower_and_vote_twice_assert():
    qs, _ = _qs()
    qs.to_follower(1, 2, 0)
    with pytest.raises(AssertionError):
        qs.to_follower(1, 3, 0)
    qs, _ = _qs()
    qs.to_unattached(1, 0)
    qs.to_voted(2, 0)
    with pytest.raises(AssertionError):
        qs.to_voted(3, 0)


def test_leader_cannot_go_back_to_candidate_in_same_epoch_or_follow_same_epoch():
    qs, _ = _qs()
    _leader(qs)
    with pytest.raises(AssertionError):
        qs.to_follower(qs.epoch, 2, 0)
    assert isinstance(qs.state, Leader)


def test_observer_is_only_unattached_or_follower():
    qs, _ = _qs(node_id=9)
    assert qs.state.election_deadline_ms is None
    with pytest.raises(AssertionError):
        qs.to_candidate(0)
    qs.to_follower(1, 2, 0)
    qs.to_unattached(1, 0)  # an observer may lose its leader in the same epoch
    assert isinstance(qs.state, Unattached)


def test_voter_follower_cannot_drop_to_unattached_in_same_epoch():
    qs, _ = _qs()
    qs.to_follower(1, 2, 0)
    with pytest.raises(AssertionError):
        qs.to_unattached(1, 0)


def test_changes_within_a_state_go_through_quorum_state_and_check_the_state():
    qs, _ = _qs()
    with pytest.raises(AssertionError):
        qs.record_vote(2, True)          # not a candidate
    qs.to_candidate(0)
    qs.record_vote(2, False)
    qs.start_backoff(50)
    assert qs.state.rejected == {2} and qs.state.backoff_until_ms == 50
    with pytest.raises(AssertionError):
        qs.start_backoff(60)             # one backoff per candidacy
    with pytest.raises(AssertionError):
        qs.leader_heard(0)               # not a follower
    qs.take_unpersisted()
    qs.to_follower(1, 3, 0)
    assert qs.take_unpersisted() == ElectionState(1, leader_id=3)
    qs.expire_leader_by(10)
    assert qs.state.fetch_deadline_ms == 10
    qs.leader_heard(5)
    assert qs.state.fetch_deadline_ms == 5 + qs.config.fetch_timeout_ms
    assert qs.take_unpersisted() is None  # changes within a state are not persisted
