"""Vote, BeginQuorumEpoch and EndQuorumEpoch: answering them and handling their answers.

Rules (KIP-595):

- Any of these from another cluster is refused (INCONSISTENT_CLUSTER_ID), from or
  about a non-voter too (INCONSISTENT_VOTER_SET), and one of an older epoch is
  fenced (FENCED_LEADER_EPOCH). Every answer carries this node's (leader, epoch).
- Vote: a newer candidate epoch makes the voter Unattached in it first; the vote is
  then decided by vote.py (log at least as up to date, one vote per epoch) and a
  grant is recorded (persisted) before the answer leaves.
- A candidate that gathers a majority becomes leader; one that can no longer win
  (too many rejections) backs off (vote.py's randomized exponential backoff).
- BeginQuorumEpoch teaches the leader of an epoch; its answer tells the leader the
  voter knows (no more BeginQuorumEpoch to it). KIP-853 (v1): the voter learns where
  the leader serves (LeaderEndpoints; its own voter set may list an old address), and
  one meant for another directory of our id is refused (INVALID_VOTER_KEY).
- EndQuorumEpoch from the resigning leader: a voter following it stands for
  election after a delay set by its place among the preferred successors; the
  answers tell the resigned leader who has heard.
- A replica downloading a snapshot advertises its log as empty when it stands, but
  compares a candidate's log with its own log or that snapshot, whichever is further.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TypeVar

from tierlog.raft.leader_fetch import leader_id_or_none
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    VoteRequest,
    VoteResponse,
)
from tierlog.raft.requests import RequestManager
from tierlog.raft.snapshot_fetch import SnapshotFetcher
from tierlog.raft.state import (
    Candidate,
    Follower,
    Leader,
    Prospective,
    QuorumState,
    Resigned,
    Unattached,
)
from tierlog.raft.types import Err, OffsetAndEpoch, RaftConfig
from tierlog.raft.vote import (
    EMPTY_LOG,
    candidate_log_ok,
    election_backoff_ms,
    end_epoch_backoff_ms,
    may_grant,
)
from tierlog.raft.voters import NO_DIRECTORY

__all__ = ["Election"]

_R = TypeVar("_R", VoteResponse, BeginQuorumEpochResponse, EndQuorumEpochResponse)


class Election:
    def __init__(self, node_id: int, config: RaftConfig, rng: random.Random, log: ReplicatedLog,
                 quorum: QuorumState, requests: RequestManager, snapshot_fetcher: SnapshotFetcher, *,
                 observe_leader: Callable[[int | None, int, int], None],
                 become_unattached: Callable[[int, int], None], become_leader: Callable[[int], None],
                 become_candidate: Callable[[int], None]):
        self._node_id = node_id
        self._config = config
        self._rng = rng
        self._log = log
        self._quorum = quorum
        self._requests = requests
        self._snapshot_fetcher = snapshot_fetcher
        self._observe_leader = observe_leader          # (leader id or None, epoch, now_ms)
        self._become_unattached = become_unattached    # (epoch, now_ms)
        self._become_leader = become_leader            # (now_ms)
        self._become_candidate = become_candidate      # (now_ms)

    def own_last(self) -> OffsetAndEpoch:
        """What this replica advertises as a candidate."""
        if self._snapshot_fetcher.active:
            return EMPTY_LOG  # KIP-630: an incomplete snapshot stands as an empty log
        return OffsetAndEpoch(self._log.end_offset, self._log.last_fetched_epoch())

    def granting_last(self) -> OffsetAndEpoch:
        """What a candidate's log is compared with before this replica grants a vote: its
        log, or the snapshot it is downloading when that is further. A replica in the middle
        of a download still holds what it held (and may have been part of a majority that
        committed it): comparing as an empty log would let a candidate without committed
        entries win (found by the simulator through membership changes)."""
        log_last = OffsetAndEpoch(self._log.end_offset, self._log.last_fetched_epoch())
        sid = self._snapshot_fetcher.snapshot_id
        return max(log_last, sid, key=OffsetAndEpoch.key) if sid is not None else log_last

    def _refusal(self, cluster_id: str, voter_ok: bool, epoch: int) -> int:
        if cluster_id != self._config.cluster_id:
            return Err.INCONSISTENT_CLUSTER_ID
        if not voter_ok:
            return Err.INCONSISTENT_VOTER_SET
        if epoch < self._quorum.epoch:
            return Err.FENCED_LEADER_EPOCH
        return Err.NONE

    def _answer(self, cls: Callable[..., _R], error: int, *extra: bool) -> _R:
        le = self._quorum.leader_and_epoch()
        return cls(error, leader_id_or_none(le.leader_id), le.epoch, *extra)

    # ---- Vote

    def on_vote_request(self, req: VoteRequest, now_ms: int) -> VoteResponse:
        q = self._quorum
        # KIP-853: our voter set may lag the candidate's, so with kraft.version 1 only our own
        # membership is checked (a removed voter that missed its removal cannot win: its log
        # lacks the committed VotersRecord; the epoch it brings lets it learn of the leader)
        # and a replica answers whatever its own set says (it may not have the record that
        # added it yet); only a request meant for another directory of our id is refused
        if q.dynamic:
            error = self._refusal(req.cluster_id, True, req.candidate_epoch)
            if error == Err.NONE and not _same_directory(req.voter_directory_id, q.directory_id):
                error = Err.INVALID_VOTER_KEY
        else:
            error = self._refusal(req.cluster_id, q.is_voter and req.candidate_id in q.voters, req.candidate_epoch)
        if error != Err.NONE:
            return self._answer(VoteResponse, error, False)
        # KIP-996: would we vote? Nothing changes here; while we hear from a leader, no (Raft
        # dissertation 4.2.3), so a replica that cannot win (a removed voter that missed its
        # removal) never becomes a candidate. A real Vote comes only after a pre-vote majority
        # and is answered as KIP-595 says (a higher epoch is adopted).
        if req.pre_vote:
            ok = not self._leader_alive(now_ms) and candidate_log_ok(
                OffsetAndEpoch(req.last_offset, req.last_offset_epoch), self.granting_last())
            return self._answer(VoteResponse, Err.NONE, ok)
        if req.candidate_epoch > q.epoch:
            self._become_unattached(req.candidate_epoch, now_ms)
        cand = OffsetAndEpoch(req.last_offset, req.last_offset_epoch)
        s = q.state
        grant = may_grant(s, req.candidate_id, cand, self.granting_last())
        if grant and isinstance(s, (Unattached, Prospective)) and s.voted_id is None:
            q.to_voted(req.candidate_id, now_ms)
        return self._answer(VoteResponse, Err.NONE, grant)

    def _leader_alive(self, now_ms: int) -> bool:
        s = self._quorum.state
        if isinstance(s, Follower):
            return s.leader_alive(now_ms)
        return isinstance(s, Leader) and s.progress.quorum_alive(now_ms)

    def on_vote_response(self, sender_id: int, req: VoteRequest, resp: VoteResponse, now_ms: int) -> None:
        q = self._quorum
        s = q.state
        if req.pre_vote:
            if isinstance(s, Prospective) and req.candidate_epoch == s.epoch + 1:
                self._on_pre_vote_response(s, sender_id, resp, now_ms)
            return
        if not isinstance(s, Candidate) or req.candidate_epoch != s.epoch or resp.leader_epoch != s.epoch:
            return
        if resp.error != Err.NONE:
            self._requests.backoff(sender_id, now_ms)
            return
        q.record_vote(sender_id, resp.vote_granted)
        if resp.vote_granted:
            if len(s.granted) >= q.majority():
                self._become_leader(now_ms)
        elif len(q.voters) - len(s.rejected) < q.majority() and s.backoff_until_ms is None:
            self.start_backoff(s, now_ms)

    def _on_pre_vote_response(self, s: Prospective, sender_id: int, resp: VoteResponse, now_ms: int) -> None:
        if resp.error != Err.NONE:
            self._requests.backoff(sender_id, now_ms)
            return
        self._quorum.record_vote(sender_id, resp.vote_granted)
        if len(s.granted) >= self._quorum.majority():
            self._become_candidate(now_ms)

    def vote_request(self, s: Candidate | Prospective, voter_id: int) -> VoteRequest:
        """A Vote for ``voter_id``; a prospective's is a pre-vote for the next epoch."""
        last = self.own_last()
        voter = self._quorum.history.latest().get(voter_id)
        pre = isinstance(s, Prospective)
        return VoteRequest(self._config.cluster_id, s.epoch + 1 if pre else s.epoch, self._node_id, last.epoch,
                           last.offset, voter.directory_id if voter is not None and self._quorum.dynamic else None,
                           pre)

    def start_backoff(self, s: Candidate, now_ms: int) -> int:
        """Back off before the next candidacy; when the backoff ends."""
        until_ms = now_ms + election_backoff_ms(self._rng, s.retries, self._config.election_backoff_max_ms)
        self._quorum.start_backoff(until_ms)
        return until_ms

    # ---- Begin/EndQuorumEpoch

    def on_begin_epoch(self, req: BeginQuorumEpochRequest, now_ms: int) -> BeginQuorumEpochResponse:
        q = self._quorum
        error = self._refusal(req.cluster_id, req.leader_id in q.voters, req.leader_epoch)
        if error == Err.NONE and q.dynamic and not _same_directory(req.voter_directory_id, q.directory_id):
            error = Err.INVALID_VOTER_KEY   # KIP-853 (v1): meant for another directory of our id
        if error != Err.NONE:
            return self._answer(BeginQuorumEpochResponse, error)
        self._observe_leader(req.leader_id, req.leader_epoch, now_ms)
        s = q.state
        if req.leader_endpoints and isinstance(s, Follower) and (s.epoch, s.leader_id) == (req.leader_epoch,
                                                                                           req.leader_id):
            s.leader_endpoints = req.leader_endpoints   # KIP-853: where it serves, whatever our set lists
        return self._answer(BeginQuorumEpochResponse, Err.NONE)

    def on_begin_epoch_response(self, sender_id: int, req: BeginQuorumEpochRequest,
                                resp: BeginQuorumEpochResponse) -> None:
        s = self._quorum.state
        if isinstance(s, Leader) and req.leader_epoch == s.epoch and resp.error == Err.NONE:
            self._quorum.ack_begin_epoch(sender_id)

    def on_end_epoch(self, req: EndQuorumEpochRequest, now_ms: int) -> EndQuorumEpochResponse:
        q = self._quorum
        # KIP-853: a leader that removed itself resigns from outside the voter set
        error = self._refusal(req.cluster_id, q.dynamic or req.leader_id in q.voters, req.leader_epoch)
        if error != Err.NONE:
            return self._answer(EndQuorumEpochResponse, error)
        if req.leader_id != self._node_id:
            self._observe_leader(req.leader_id, req.leader_epoch, now_ms)
        s = q.state
        if isinstance(s, Follower) and s.leader_id == req.leader_id and q.is_voter:
            backoff = end_epoch_backoff_ms(self._node_id, req.preferred_successors,
                                           self._config.election_backoff_max_ms)
            q.expire_leader_by(now_ms + backoff)
        return self._answer(EndQuorumEpochResponse, Err.NONE)

    def on_end_epoch_response(self, sender_id: int, req: EndQuorumEpochRequest,
                              resp: EndQuorumEpochResponse) -> None:
        s = self._quorum.state
        if isinstance(s, Resigned) and req.leader_epoch == s.epoch and resp.error == Err.NONE:
            self._quorum.ack_end_epoch(sender_id)


def _same_directory(asked: bytes | None, own: bytes | None) -> bool:
    """A Vote meant for directory ``asked`` may be answered by a replica of directory ``own``."""
    return asked in (None, NO_DIRECTORY) or own in (None, NO_DIRECTORY) or asked == own
