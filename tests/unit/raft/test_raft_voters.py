"""KIP-853 voter sets: the history in the log, its codec, and the leader's change rules."""

import random

from raft_harness import FAST

from tierlog.raft import FetchRequest, MemoryLog, MemoryQuorumStateStore, MemorySnapshotStore, RaftNode, VoteRequest
from tierlog.raft.file_log import FileLog
from tierlog.raft.snapshots import SnapshotReader
from tierlog.raft.types import Err
from tierlog.raft.voters import (
    KRAFT_VOTERS,
    Endpoint,
    Voter,
    VoterHistory,
    VoterSet,
    decode_voters,
    encode_voters,
)

D1, D2, D3, D9 = (bytes([i]) * 16 for i in (1, 2, 3, 9))
EP = (Endpoint("CONTROLLER", "localhost", 9093),)


def _set(*pairs):
    return VoterSet(Voter(i, d, EP) for i, d in pairs)


def test_voters_record_round_trips_with_directory_ids_and_endpoints():
    vs = _set((1, D1), (3, D3))
    back = decode_voters(encode_voters(vs))
    assert back == vs
    assert back.get(3).endpoints == EP and back.get(3).directory_id == D3


def test_voter_identity_is_id_and_directory():
    vs = _set((1, D1))
    assert vs.is_voter(1, D1)
    assert not vs.is_voter(1, D9)          # the same id after a wiped disk is not the voter
    assert VoterSet.of_ids([1]).is_voter(1, D9)   # kraft.version 0: ids only


def test_history_takes_the_latest_and_reverts_on_truncation():
    h = VoterHistory(_set((1, D1)))
    h.add(5, _set((1, D1), (2, D2)))
    h.add(9, _set((1, D1), (2, D2), (3, D3)))
    assert h.latest().ids == {1, 2, 3} and h.at(8).ids == {1, 2} and h.at(4).ids == {1}
    assert h.changes_from(6) == 1
    h.truncate_to(9)                       # the record at 9 is gone: the one at 5 is in effect
    assert h.latest().ids == {1, 2} and h.latest_offset == 5
    h.truncate_to(0)
    assert h.latest().ids == {1} and h.latest_offset == -1
    h.add(3, _set((2, D2)))
    h.prune_before(7)
    assert h.at(7).ids == {2} and len(h) == 1


def _leader(voters, directory=D1, log=None, snaps=None):
    node = RaftNode(1, voters, log or MemoryLog(), snaps or MemorySnapshotStore(), MemoryQuorumStateStore(),
                    FAST, random.Random(1), 0, directory_id=directory)
    now = 0
    while not node.is_leader:
        now += 50
        node.tick(now)
    node.log.flush()
    node.handle_log_flushed(now)
    assert node.high_watermark == node.log.end_offset   # its epoch has a committed entry
    return node, now


def _fetch(node, replica_id, now):
    """Replica ``replica_id`` fetches at the leader's log end (it holds everything)."""
    log = node.log
    req = FetchRequest("t", replica_id, node.epoch, log.end_offset, log.last_fetched_epoch(), log.start_offset, 0,
                       1 << 20)
    node.handle_request(replica_id, req, now)


def test_first_leader_writes_the_bootstrap_set_into_the_log():
    node, _ = _leader(_set((1, D1)))
    kinds = [b.control_type for b in node.log.read(0, 1 << 20) if b.control]
    assert KRAFT_VOTERS in kinds and node.voter_log.history.latest_offset >= 0


def test_static_quorum_refuses_changes():
    node, now = _leader(frozenset({1}), directory=None)
    assert node.add_voter(Voter(2, D2), now) == (Err.UNSUPPORTED_VERSION, None)


def test_leader_rules_duplicate_unknown_not_caught_up_and_one_at_a_time():
    node, now = _leader(_set((1, D1)))
    assert node.add_voter(Voter(1, D1), now)[0] == Err.DUPLICATE_VOTER
    assert node.add_voter(Voter(2, D2), now)[0] == Err.REQUEST_TIMED_OUT     # never fetched
    assert node.remove_voter(2, D2, now)[0] == Err.VOTER_NOT_FOUND
    assert node.remove_voter(1, D9, now)[0] == Err.VOTER_NOT_FOUND          # wrong directory
    assert node.remove_voter(1, D1, now)[0] == Err.VOTER_NOT_FOUND          # the last voter
    _fetch(node, 2, now)                   # an observer that caught up
    error, offset = node.add_voter(Voter(2, D2, EP), now)
    assert error == Err.NONE and node.voters == {1, 2}
    assert node.add_voter(Voter(3, D3), now)[0] == Err.REQUEST_TIMED_OUT     # the first is not committed
    assert not node.voter_change_committed(offset)


def _clock():
    return 0


def test_voter_set_survives_restart_from_the_file_log_and_goes_into_snapshots(tmp_path):
    log = FileLog.open(tmp_path / "log", clock_ms=_clock)
    snaps = MemorySnapshotStore()
    node, now = _leader(_set((1, D1)), log=log, snaps=snaps)
    _fetch(node, 2, now)
    _, offset = node.add_voter(Voter(2, D2, EP), now)
    node.tick(now)
    log.flush()
    node.handle_log_flushed(now)
    _fetch(node, 2, now)
    assert node.voter_change_committed(offset)
    # the VotersRecord keeps its control type on disk: a restart reads the set back
    reopened = FileLog.open(tmp_path / "log", clock_ms=_clock)
    restarted = RaftNode(1, _set((1, D1)), reopened, snaps, MemoryQuorumStateStore(), FAST, random.Random(2),
                         now, directory_id=D1)
    assert restarted.voters == {1, 2} and restarted.voter_set.get(2).endpoints == EP
    # a snapshot holds the set in effect at its end
    w = node.create_snapshot(log.end_offset, node.epoch, 0)
    w.append([b"state"])
    w.freeze()
    reader = SnapshotReader(w.snapshot_id, snaps.read_all(w.snapshot_id))
    assert reader.voters.ids == {1, 2} and reader.kraft_version == 1 and list(reader) == [b"state"]


def test_a_vote_for_another_directory_of_our_id_is_refused():
    """A wiped controller (new directory id) must not vote as the voter it used to be."""
    node = RaftNode(2, _set((1, D1), (2, D2)), MemoryLog(), MemorySnapshotStore(), MemoryQuorumStateStore(), FAST,
                    random.Random(1), 0, directory_id=D9)
    assert not node.is_voter
    asked_old = VoteRequest("t", 1, 1, 0, 0, voter_directory_id=D2)
    r = node.handle_request(1, asked_old, 0).response
    assert r.error == Err.INVALID_VOTER_KEY and not r.vote_granted
    assert node.handle_request(1, VoteRequest("t", 1, 1, 0, 0, voter_directory_id=D9), 0).response.vote_granted


def test_a_fetch_from_another_directory_of_a_voters_id_is_not_counted():
    """KIP-853: a controller whose disk was wiped comes back under its id with a new directory
    (Fetch's ReplicaDirectoryId); until it is removed and added again its fetches are answered
    but do not count as the voter's progress, so they cannot move the high watermark."""
    node, now = _leader(_set((1, D1)))
    _fetch(node, 2, now)                   # replica 2 caught up as an observer
    assert node.add_voter(Voter(2, D2, EP), now)[0] == Err.NONE
    node.tick(now)
    node.log.flush()
    node.handle_log_flushed(now)
    hw, log = node.high_watermark, node.log
    assert hw < log.end_offset             # voter 2 has not fetched it yet
    wiped = FetchRequest("t", 2, node.epoch, log.end_offset, log.last_fetched_epoch(), log.start_offset, 0, 1 << 20,
                         replica_directory_id=D9)
    assert node.handle_request(2, wiped, now).response.error == Err.NONE
    assert node.high_watermark == hw
    same = FetchRequest("t", 2, node.epoch, log.end_offset, log.last_fetched_epoch(), log.start_offset, 0, 1 << 20,
                        replica_directory_id=D2)
    node.handle_request(2, same, now)
    assert node.high_watermark == log.end_offset
