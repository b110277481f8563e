"""Election states and the only code allowed to change them (Kafka's QuorumState).

States (one class each):

- ``Unattached(epoch, voted_id)``: no known leader in ``epoch``; a voter may have voted.
- ``Prospective(epoch)``: (kraft.version 1 only, KIP-996 pre-vote) a voter whose leader
  is gone asks the voters whether they would vote for it in ``epoch + 1``, without
  changing any epoch; with a majority it stands. A removed voter that missed its
  removal can so never push the quorum's epoch up (nobody pre-votes for it while a
  leader is alive), and learns the leader from the answers.
- ``Candidate(epoch)``: a voter asking for votes in ``epoch`` (voted for itself).
- ``Leader(epoch)``: this node leads ``epoch``.
- ``Follower(epoch, leader_id)``: replicating from ``leader_id``.
- ``Resigned(epoch)``: was leader of ``epoch``; shutting down gracefully or lost the
  quorum; tells the voters with EndQuorumEpoch and waits to stand again.

Legal transitions (anything else is an AssertionError). "higher" means the new epoch
is larger than the current one, "same" equal, "next" exactly one more:

    Unattached -> Unattached   higher; or same, to record a vote when none was cast
    Unattached -> Candidate    next (voters only: election timeout)
    Unattached -> Follower     same or higher (leader discovered)
    Candidate  -> Candidate    next (election lost or timed out, after backoff)
    Candidate  -> Leader       same (majority granted)
    Candidate  -> Follower     same or higher
    Candidate  -> Unattached   higher
    Leader     -> Resigned     same (graceful shutdown, or check-quorum failed)
    Leader     -> Unattached   higher
    Leader     -> Follower     higher
    Follower   -> Candidate    next (voters only: fetch timeout or EndQuorumEpoch)
    Follower   -> Follower     higher
    Follower   -> Unattached   higher; or same for an observer that lost its leader
    Resigned   -> Candidate    next (election timeout)
    Resigned   -> Unattached   higher; or same for a leader that removed itself (KIP-853)
    Resigned   -> Follower     higher
    (kraft.version 1: Unattached, Follower, Resigned and Candidate -> Prospective same;
    Prospective -> Prospective same, -> Candidate next, -> Follower same or higher,
    -> Unattached higher or same to record a vote)

Observers (not in the voter set) are only ever Unattached or Follower, except a
leader that removed itself from the voter set (KIP-853): it leads until that change
commits, then resigns and becomes an Unattached observer of the same epoch. The voter
set is the latest one in the log (raft/voters.py), so a node may become a voter or
stop being one in any state; ``voters_changed`` fixes the Unattached timer then.

Changes within a state (votes received, a candidate's backoff, acknowledged
Begin/EndQuorumEpoch, a follower's fetch deadline) also go through QuorumState's
methods; no other module assigns a state's fields.
Persistence (docs/architecture.md, "The pattern"; etcd's Ready): each transition changes the
state in memory and records the new ElectionState as ``unpersisted``; RaftNode puts
it in the call's Output (``Output.quorum_state``) and the shell writes it through the
QuorumStateStore (durably, off the event loop) BEFORE it sends anything from that
Output or any later one. So no other node ever learns of a vote, an epoch or a
leadership that a crash could forget. Start-up reads the store once.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tierlog.raft.leader import LeaderProgress
from tierlog.raft.quorum_store import ElectionState, QuorumStateStore
from tierlog.raft.types import LeaderAndEpoch, RaftConfig
from tierlog.raft.voters import Endpoint, VoterHistory, VoterSet

__all__ = ["Candidate", "Follower", "Leader", "Prospective", "QuorumState", "Resigned", "Unattached"]


@dataclass
class Unattached:
    epoch: int
    voted_id: int | None
    election_deadline_ms: int | None  # None for observers

    name = "unattached"


@dataclass
class Candidate:
    epoch: int
    granted: set[int]
    rejected: set[int]
    retries: int
    election_deadline_ms: int
    backoff_until_ms: int | None = None

    name = "candidate"


@dataclass
class Prospective:
    epoch: int
    voted_id: int | None
    granted: set[int]
    rejected: set[int]
    retries: int
    election_deadline_ms: int
    left_leader: int | None = None   # the leader of this epoch it stopped hearing from

    name = "prospective"


@dataclass
class Leader:
    epoch: int
    epoch_start_offset: int
    progress: LeaderProgress
    acked_begin: set[int] = field(default_factory=set)

    name = "leader"


@dataclass
class Follower:
    epoch: int
    leader_id: int
    fetch_deadline_ms: int
    leader_resigned: bool = False   # EndQuorumEpoch heard: the leader is going away
    #: KIP-853: where the leader said it serves (BeginQuorumEpoch v1 LeaderEndpoints); () = as listed
    leader_endpoints: tuple[Endpoint, ...] = ()

    def leader_alive(self, now_ms: int) -> bool:
        return now_ms < self.fetch_deadline_ms and not self.leader_resigned

    name = "follower"


@dataclass
class Resigned:
    epoch: int
    election_deadline_ms: int
    preferred_successors: tuple[int, ...]
    acked_end: set[int] = field(default_factory=set)

    name = "resigned"


State = Unattached | Prospective | Candidate | Leader | Follower | Resigned
S = TypeVar("S", Unattached, Prospective, Candidate, Leader, Follower, Resigned)

_LEGAL = {
    ("unattached", "unattached"): "higher_or_vote",
    ("unattached", "candidate"): "next",
    ("unattached", "follower"): "same_or_higher",
    ("candidate", "candidate"): "next",
    ("candidate", "leader"): "same",
    ("candidate", "follower"): "same_or_higher",
    ("candidate", "unattached"): "higher",
    ("leader", "resigned"): "same",
    ("leader", "unattached"): "higher",
    ("leader", "follower"): "higher",
    ("follower", "candidate"): "next",
    ("follower", "follower"): "higher",
    ("follower", "unattached"): "higher_or_observer_same",
    ("resigned", "candidate"): "next",
    ("resigned", "unattached"): "higher_or_observer_same",
    ("resigned", "follower"): "higher",
    ("unattached", "prospective"): "same",
    ("follower", "prospective"): "same",
    ("resigned", "prospective"): "same",
    ("candidate", "prospective"): "same",
    ("prospective", "prospective"): "same",
    ("prospective", "candidate"): "next",
    ("prospective", "follower"): "same_or_higher",
    ("prospective", "unattached"): "higher_or_vote_or_observer_same",
}


class QuorumState:
    """Current election state of one node; every change goes through ``_transition``."""

    def __init__(self, node_id: int, history: VoterHistory | frozenset[int], store: QuorumStateStore,
                 config: RaftConfig, rng: random.Random, now_ms: int, *,
                 directory_id: bytes | None = None, dynamic: bool = False,
                 high_watermark: Callable[[], int] = lambda: 0):
        self.node_id = node_id
        if not isinstance(history, VoterHistory):   # a static voter set (kraft.version 0)
            history = VoterHistory(VoterSet.of_ids(history))
        self.history = history          # the voter sets in the log; the latest is in effect
        self.directory_id = directory_id
        self.dynamic = dynamic          # kraft.version 1: a leader may be outside our voter set
        self._high_watermark = high_watermark
        self.store = store
        self.config = config
        self.rng = rng
        self.state: State = self._initial(store.read(), now_ms)
        self._unpersisted: ElectionState | None = None

    # ---- queries

    @property
    def voters(self) -> frozenset[int]:
        return self.history.latest().ids

    @property
    def in_voter_set(self) -> bool:
        """Whether this replica is in the latest voter set (KIP-853: the one in effect)."""
        return self.history.latest().is_voter(self.node_id, self.directory_id)

    @property
    def is_voter(self) -> bool:
        """Whether this replica acts as a voter: it is in the latest voter set, or its own
        removal is not committed yet (the committed set still holds it). The second case
        keeps the quorum live when a leader removed itself and lost leadership before the
        change reached the remaining voters: only this replica may carry the change on,
        standing for election with the latest set's votes (Raft dissertation 4.2.2)."""
        if self.in_voter_set:
            return True
        hw = self._high_watermark()
        return self.dynamic and self.history.at(hw - 1).is_voter(self.node_id, self.directory_id)

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def name(self) -> str:
        return self.state.name

    def leader_and_epoch(self) -> LeaderAndEpoch:
        s = self.state
        if isinstance(s, Leader):
            return LeaderAndEpoch(self.node_id, s.epoch)
        if isinstance(s, Follower):
            return LeaderAndEpoch(s.leader_id, s.epoch)
        return LeaderAndEpoch(None, s.epoch)

    def majority(self) -> int:
        return self.history.latest().majority()

    def own_vote(self) -> set[int]:
        """A candidate's own vote counts only when it is in the latest set."""
        return {self.node_id} if self.in_voter_set else set()

    def election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self.rng.randrange(t) if t > 0 else 0

    # ---- start-up

    def _initial(self, persisted: ElectionState | None, now_ms: int) -> State:
        if persisted is None:
            return self._unattached(0, None, now_ms)
        e = persisted
        if e.leader_id is not None and e.leader_id == self.node_id and self.is_voter:
            # we led this epoch before the restart: resign it, as Kafka does
            return Resigned(e.epoch, now_ms + self.election_timeout(), ())
        if e.leader_id is not None and e.leader_id != self.node_id:
            return Follower(e.epoch, e.leader_id, now_ms + self.config.fetch_timeout_ms)
        if e.voted_id is not None and e.voted_id == self.node_id and self.is_voter:
            return Candidate(e.epoch, self.own_vote(), set(), 1, now_ms + self.election_timeout())
        return self._unattached(e.epoch, e.voted_id, now_ms)

    def _unattached(self, epoch: int, voted_id: int | None, now_ms: int) -> Unattached:
        deadline = now_ms + self.election_timeout() if self.is_voter else None
        return Unattached(epoch, voted_id, deadline)

    # ---- transitions

    def _check(self, new: State) -> None:
        old = self.state
        rule = _LEGAL.get((old.name, new.name))
        assert rule is not None, f"node {self.node_id}: illegal transition {old} -> {new}"
        if not self.is_voter and (old.name, new.name) != ("leader", "resigned"):
            assert new.name in ("unattached", "follower"), f"observer {self.node_id} cannot become {new.name}"
        d = new.epoch - old.epoch
        if rule == "higher_or_vote":
            ok = d > 0 or (d == 0 and _voted_id(old) is None and _voted_id(new) is not None)
        elif rule == "higher_or_vote_or_observer_same":
            ok = d > 0 or (d == 0 and (not self.is_voter or (_voted_id(old) is None and _voted_id(new) is not None)))
        elif rule == "higher_or_observer_same":
            ok = d > 0 or (d == 0 and not self.is_voter)
        else:
            ok = {"higher": d > 0, "same": d == 0, "next": d == 1, "same_or_higher": d >= 0}[rule]
        assert ok, f"node {self.node_id}: illegal epoch change {old} -> {new}"

    def _transition(self, new: S, persisted: ElectionState) -> S:
        self._check(new)
        self._unpersisted = persisted  # the shell makes it durable before any effect leaves
        self.state = new
        return new

    def take_unpersisted(self) -> ElectionState | None:
        """The latest ElectionState not yet handed out for writing (then forgotten)."""
        state, self._unpersisted = self._unpersisted, None
        return state

    def to_unattached(self, epoch: int, now_ms: int) -> Unattached:
        return self._transition(self._unattached(epoch, None, now_ms), ElectionState(epoch))

    def to_voted(self, candidate_id: int, now_ms: int) -> Unattached:
        s = self.state
        assert isinstance(s, (Unattached, Prospective)) and s.voted_id is None
        new = Unattached(s.epoch, candidate_id, now_ms + self.election_timeout())
        return self._transition(new, ElectionState(s.epoch, voted_id=candidate_id))

    def to_prospective(self, now_ms: int) -> Prospective:
        """KIP-996: ask for pre-votes in this epoch; what is on disk stays as it was."""
        s = self.state
        retries = s.retries if isinstance(s, (Candidate, Prospective)) else 0
        if isinstance(s, (Unattached, Prospective)):
            voted, on_disk = s.voted_id, ElectionState(s.epoch, voted_id=s.voted_id)
        elif isinstance(s, Candidate):
            voted, on_disk = self.node_id, ElectionState(s.epoch, voted_id=self.node_id)
        elif isinstance(s, Follower):
            voted, on_disk = None, ElectionState(s.epoch, leader_id=s.leader_id)
        else:
            voted, on_disk = None, ElectionState(s.epoch, leader_id=self.node_id)
        left = s.left_leader if isinstance(s, Prospective) else self.leader_and_epoch().leader_id
        new = Prospective(s.epoch, voted, self.own_vote(), set(), retries, now_ms + self.election_timeout(), left)
        return self._transition(new, on_disk)

    def to_candidate(self, now_ms: int) -> Candidate:
        s = self.state
        retries = s.retries + 1 if isinstance(s, (Candidate, Prospective)) else 1
        epoch = s.epoch + 1
        new = Candidate(epoch, self.own_vote(), set(), retries, now_ms + self.election_timeout())
        return self._transition(new, ElectionState(epoch, voted_id=self.node_id))

    def to_leader(self, epoch_start_offset: int, progress: LeaderProgress) -> Leader:
        s = self.state
        assert isinstance(s, Candidate) and len(s.granted) >= self.majority()
        new = Leader(s.epoch, epoch_start_offset, progress)
        return self._transition(new, ElectionState(s.epoch, leader_id=self.node_id))

    def to_follower(self, epoch: int, leader_id: int, now_ms: int) -> Follower:
        assert leader_id != self.node_id
        assert self.dynamic or leader_id in self.voters, f"leader {leader_id} is not a voter"
        new = Follower(epoch, leader_id, now_ms + self.config.fetch_timeout_ms)
        voted = self.state.voted_id if isinstance(self.state, Unattached) and epoch == self.epoch else None
        return self._transition(new, ElectionState(epoch, leader_id=leader_id, voted_id=voted))

    def to_observer_after_removal(self, now_ms: int) -> Unattached:
        """A resigned leader that is no longer a voter (KIP-853) waits, as an observer,
        for the next leader."""
        s = self.state
        assert isinstance(s, Resigned) and not self.is_voter
        return self._transition(self._unattached(s.epoch, None, now_ms), ElectionState(s.epoch))

    def to_resigned(self, preferred_successors: tuple[int, ...], now_ms: int) -> Resigned:
        s = self.state
        assert isinstance(s, Leader)
        new = Resigned(s.epoch, now_ms + self.election_timeout(), preferred_successors)
        return self._transition(new, ElectionState(s.epoch, leader_id=self.node_id))

    # ---- changes within a state (volatile: nothing here is persisted)

    def voters_changed(self, now_ms: int) -> None:
        """The voter set in effect changed: an Unattached node that became a voter starts
        its election timer, one that stopped being a voter drops it."""
        s = self.state
        if isinstance(s, Unattached):
            if self.is_voter and s.election_deadline_ms is None:
                s.election_deadline_ms = now_ms + self.election_timeout()
            elif not self.is_voter:
                s.election_deadline_ms = None

    def record_vote(self, voter_id: int, granted: bool) -> None:
        """A candidate's (or a prospective's pre-vote) answer from ``voter_id``."""
        s = self.state
        assert isinstance(s, (Candidate, Prospective)), f"node {self.node_id}: a vote answer for a {s.name}"
        (s.granted if granted else s.rejected).add(voter_id)

    def start_backoff(self, until_ms: int) -> None:
        """The candidate lost or timed out: stand again at ``until_ms``."""
        s = self.state
        assert isinstance(s, Candidate) and s.backoff_until_ms is None, f"node {self.node_id}: backoff in {s}"
        s.backoff_until_ms = until_ms

    def ack_begin_epoch(self, voter_id: int) -> None:
        """The leader knows ``voter_id`` learned of its epoch (BeginQuorumEpoch or a Fetch)."""
        s = self.state
        assert isinstance(s, Leader), f"node {self.node_id}: BeginQuorumEpoch ack as {s.name}"
        s.acked_begin.add(voter_id)

    def ack_end_epoch(self, voter_id: int) -> None:
        s = self.state
        assert isinstance(s, Resigned), f"node {self.node_id}: EndQuorumEpoch ack as {s.name}"
        s.acked_end.add(voter_id)

    def leader_heard(self, now_ms: int) -> None:
        """A follower got a good answer from its leader: the fetch timeout starts again."""
        s = self.state
        assert isinstance(s, Follower), f"node {self.node_id}: leader heard as {s.name}"
        s.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms

    def expire_leader_by(self, deadline_ms: int) -> None:
        """EndQuorumEpoch: the follower stands for election by ``deadline_ms`` at the latest."""
        s = self.state
        assert isinstance(s, Follower), f"node {self.node_id}: EndQuorumEpoch as {s.name}"
        s.fetch_deadline_ms = min(s.fetch_deadline_ms, deadline_ms)
        s.leader_resigned = True


def _voted_id(state: State) -> int | None:
    """Whom ``state`` voted for in its epoch: only an Unattached state records a vote."""
    return state.voted_id if isinstance(state, (Unattached, Prospective)) else None
