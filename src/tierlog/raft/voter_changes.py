"""KIP-853 voter changes at the leader, and the quorum's description (DescribeQuorum).

``VoterChanges.add`` / ``remove`` / ``update`` (RaftNode's ``add_voter`` /
``remove_voter`` / ``update_voter``) return a Kafka error code and the offset of the
VotersRecord written; the change is done once the high watermark passes it
(``committed``). The rules are leader_voters.py's: only the leader, only with
kraft.version 1 (UNSUPPORTED_VERSION), one change at a time, a new voter caught up
as an observer, the (id, directory id) of a removed or updated voter. The record is
its own control batch, after the proposals queued before it; the new set counts for
the high watermark from the moment it is written (``on_written``).

A voter's listeners move only across a restart (KIP-853 UpdateRaftVoter): ``to_update``
tells a voter whether the latest set in its log lists it elsewhere (the shell keeps
asking its leader while it does, server/voter_update.py); a new leader lists its own
endpoints itself at the start of its epoch (``epoch_started``).

``describe`` is DescribeQuorum's view: the leader lists its voters' and observers'
progress; every replica names each voter's endpoints (``Nodes``), so a tool that
asked a follower learns where the leader is.
"""

from __future__ import annotations

from collections.abc import Callable

from tierlog.raft.commits import CommitDelivery
from tierlog.raft.leader import LeaderProgress, ReplicaProgress
from tierlog.raft.leader_fetch import LeaderFetch, leader_id_or_none
from tierlog.raft.leader_voters import change_allowed, voters_after_add, voters_after_remove
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.state import Follower, Leader, QuorumState
from tierlog.raft.types import Err, QuorumInfo, RaftConfig, ReplicaInfo
from tierlog.raft.voter_log import VoterLog
from tierlog.raft.voters import (
    KRAFT_VERSION,
    KRAFT_VOTERS,
    NO_DIRECTORY,
    Endpoint,
    Voter,
    VoterSet,
    encode_kraft_version,
    encode_voters,
    relisted,
)

__all__ = ["VoterChanges", "describe"]


class VoterChanges:
    def __init__(self, config: RaftConfig, log: ReplicatedLog, quorum: QuorumState, voter_log: VoterLog,
                 commits: CommitDelivery, leader_fetch: LeaderFetch, kraft_version: int,
                 on_written: Callable[[int], None], node_id: int, directory_id: bytes | None,
                 endpoints: tuple[Endpoint, ...]):
        self._node_id = node_id
        self._directory_id = directory_id
        self.endpoints = endpoints        # where this replica serves (its controller listeners)
        self._config = config
        self._log = log
        self._quorum = quorum
        self._voter_log = voter_log
        self._commits = commits
        self._leader_fetch = leader_fetch
        self._kraft_version = kraft_version
        self._on_written = on_written     # (now_ms): the set in effect changed; flush and wake
        #: an endpoint update waiting for the voter's Fetch to reach our log end: (epoch, id, directory, endpoints)
        self._waiting: tuple[int, int, bytes, tuple[Endpoint, ...]] | None = None

    def add(self, voter: Voter, now_ms: int) -> tuple[int, int | None]:
        """AddRaftVoter at the leader: (error, offset of the VotersRecord written)."""
        error, s = self._may_change()
        if s is None:
            return error, None
        error, new = voters_after_add(self._voters, voter, s.progress, self._config, now_ms)
        return self._write(new, now_ms) if new is not None else (error, None)

    def remove(self, voter_id: int, directory_id: bytes, now_ms: int) -> tuple[int, int | None]:
        """RemoveRaftVoter at the leader: (error, offset of the VotersRecord written)."""
        error, s = self._may_change()
        if s is None:
            return error, None
        error, new = voters_after_remove(self._voters, voter_id, directory_id)
        return self._write(new, now_ms) if new is not None else (error, None)

    def update(self, voter_id: int, directory_id: bytes, endpoints: tuple[Endpoint, ...],
               now_ms: int) -> tuple[int, int | None]:
        """UpdateRaftVoter at the leader: a voter's new endpoints (NONE, None: unchanged)."""
        error, s = self._may_change()
        if s is None:
            return error, None
        v = self._voters.get(voter_id)
        if v is None or v.directory_id != directory_id:
            return Err.VOTER_NOT_FOUND, None
        if v.endpoints == endpoints:
            return Err.NONE, None
        self._leader_fetch.drain(now_ms)   # queued proposals go first: the voter must hold them too
        p = s.progress.progress_of(voter_id)
        if p is None or p.end_offset < self._log.end_offset:
            self._waiting = (s.epoch, voter_id, directory_id, endpoints)   # written by ``fetched``
            return Err.REQUEST_TIMED_OUT, None
        self._waiting = None
        return self._write(self._voters.with_endpoints(voter_id, endpoints), now_ms)

    def fetched(self, replica_id: int, now_ms: int) -> None:
        """A Fetch from ``replica_id`` was taken: the endpoint update waiting for that voter to reach
        our log end is written now if it has (the shell's controller moves past the record)."""
        w = self._waiting
        if w is None or w[1] != replica_id:
            return
        if not isinstance(self._quorum.state, Leader) or self._quorum.epoch != w[0]:
            self._waiting = None
            return
        error, _ = self.update(w[1], w[2], w[3], now_ms)
        if error != Err.REQUEST_TIMED_OUT:
            self._waiting = None

    def epoch_started(self, epoch: int, now_ms: int) -> None:
        """A new leader's first records after its LeaderChange (KIP-853): the bootstrap set when
        the log holds none (so the log describes itself), and the set with this leader's own
        endpoints when it lists it elsewhere (it moved and the update was lost), as Kafka's
        leader writes at the start of its epoch. Only endpoints change: no membership."""
        if self._kraft_version < 1:
            return
        voters = self._voters
        own = voters.get(self._node_id)
        moved = relisted(own, self.endpoints) if own is not None and own.directory_id == self._directory_id \
            else None
        first = self._voter_log.history.latest_offset < 0
        if first:
            self._log.append_as_leader([encode_kraft_version(1)], epoch, now_ms, control=True,
                                       control_type=KRAFT_VERSION)
        if first or moved is not None:
            batch = self._log.append_as_leader(
                [encode_voters(voters if moved is None else voters.with_endpoints(self._node_id, moved))],
                epoch, now_ms, control=True, control_type=KRAFT_VOTERS)
            self._voter_log.appended([batch])
            self._voter_log.take_changed()

    def leader_endpoints(self) -> tuple[Endpoint, ...]:
        """Where the leader of the epoch serves: our own endpoints when leading, what it said in
        BeginQuorumEpoch (KIP-853 LeaderEndpoints), else what the voter set lists; () unknown."""
        s = self._quorum.state
        if isinstance(s, Leader) and self.endpoints:
            return self.endpoints
        if isinstance(s, Follower) and s.leader_endpoints:
            return s.leader_endpoints
        leader_id = self._quorum.leader_and_epoch().leader_id
        leader = self._voters.get(leader_id) if leader_id is not None else None
        return leader.endpoints if leader is not None else ()

    def to_update(self) -> tuple[Endpoint, ...] | None:
        """The endpoints this voter should ask its leader to list (KIP-853 UpdateRaftVoter): its
        listeners when the latest voter set in its log lists it elsewhere; None when they agree,
        or when it is not a voter under its own directory, or leads (it writes its own)."""
        if self._kraft_version < 1 or isinstance(self._quorum.state, Leader) or not self.endpoints:
            return None
        own = self._voters.get(self._node_id)
        if own is None or own.directory_id != self._directory_id:
            return None
        return relisted(own, self.endpoints)

    def committed(self, offset: int) -> bool:
        return self._commits.high_watermark > offset

    @property
    def _voters(self) -> VoterSet:
        return self._voter_log.history.latest()

    def _may_change(self) -> tuple[int, Leader | None]:
        s = self._quorum.state
        if not isinstance(s, Leader):
            return Err.NOT_LEADER_OR_FOLLOWER, None
        if self._kraft_version < 1:
            return Err.UNSUPPORTED_VERSION, None
        error = change_allowed(self._voter_log.history, s.progress, self._commits.high_watermark)
        return error, (s if error == Err.NONE else None)

    def _write(self, voters: VoterSet, now_ms: int) -> tuple[int, int]:
        self._leader_fetch.drain(now_ms)   # queued proposals go first, in their own batch
        batch = self._log.append_as_leader([encode_voters(voters)], self._quorum.epoch, now_ms, control=True,
                                           control_type=KRAFT_VOTERS)
        self._voter_log.appended([batch])
        self._voter_log.take_changed()
        self._on_written(now_ms)
        self._leader_fetch.wake_parked(now_ms)   # the voters fetch it at once
        return Err.NONE, batch.base_offset


def describe(node_id: int, quorum: QuorumState, voters: VoterSet, high_watermark: int) -> QuorumInfo:
    """DescribeQuorum's partition answer from this replica (NOT_LEADER_OR_FOLLOWER off the leader)."""
    nodes = {v.voter_id: tuple((e.name, e.host, e.port) for e in v.endpoints) for v in voters if v.endpoints}
    s = quorum.state
    if not isinstance(s, Leader):
        return QuorumInfo(Err.NOT_LEADER_OR_FOLLOWER, leader_id_or_none(quorum.leader_and_epoch().leader_id),
                          s.epoch, high_watermark, [], [], nodes)
    prog: LeaderProgress = s.progress

    def info(p: ReplicaProgress) -> ReplicaInfo:
        v = voters.get(p.replica_id)
        return ReplicaInfo(p.replica_id, p.end_offset, p.last_fetch_ms, p.last_caught_up_ms,
                           v.directory_id if v is not None else NO_DIRECTORY)

    return QuorumInfo(Err.NONE, node_id, s.epoch, high_watermark,
                      [info(p) for _, p in sorted(prog.voters.items())],
                      [info(p) for _, p in sorted(prog.observers.items())], nodes)
