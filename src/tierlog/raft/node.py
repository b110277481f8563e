"""RaftNode: one replica of the metadata quorum, sans-IO; it coordinates the units below.

The shell (asyncio in a real process, the simulator in tests) calls:

- ``handle_request(sender_id, request, now_ms) -> RequestOutcome``
- ``handle_response(sender_id, request, response, now_ms) -> Output``
- ``handle_send_failure(dest_id, request, now_ms) -> Output``
- ``tick(now_ms) -> Output`` at ``Output.next_deadline_ms`` at the latest
- ``handle_log_flushed(now_ms) -> Output`` when a flush the Output asked for is done
- ``propose(records, now_ms, epoch=None) -> int``, ``resign(now_ms) -> Output``,
  ``create_snapshot(end_offset, epoch, last_contained_ts_ms)``, ``describe(now_ms)``
- with kraft.version 1 (KIP-853): ``add_voter``, ``remove_voter``, ``update_voter``
  -> (error, offset of the VotersRecord); the change is done once the high
  watermark passes that offset (``voter_change_committed``); ``leader_endpoints()``,
  ``endpoints_to_update()`` (what a moved voter asks its leader to list)

Persistence contract (etcd's ``Ready``; docs/architecture.md, "The pattern"): the Output says what
must become durable - ``quorum_state`` (the ElectionState to write) and
``flush_log_to`` (flush the log's appends up to this offset) - and the shell makes
it durable, in order and off its event loop, BEFORE it sends the Output's requests
or answers, and before any later Output's. The leader counts its own log towards
the high watermark only as ``log.flushed_end_offset`` reports it, after the shell
calls ``handle_log_flushed``. Truncations, log-start moves and snapshots are
still durable when the log/snapshot store call returns (they are rare).

Commit delivery is a pull (etcd's ``Ready.CommittedEntries``): ``Output.committed``
carries, in order, the batches that became committed, the snapshots to load and the
leader changes (raft/committed.py); the shell applies them. The core calls nothing
above it. The snapshot a restarted replica loads comes out of the first ``tick``.

What this module holds itself: dispatching messages, leader discovery from any
message (``_observe_leader``), what happens around each transition, and the
per-state timers (``_poll_*``). Everything else is delegated to one unit per
concern (the map is in the package docstring).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tierlog.raft.codec import leader_change_value
from tierlog.raft.commits import CommitDelivery
from tierlog.raft.committed import Committed
from tierlog.raft.election import Election
from tierlog.raft.follower_fetch import FollowerFetch
from tierlog.raft.leader import LeaderProgress
from tierlog.raft.leader_fetch import LeaderFetch, leader_id_or_none
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)
from tierlog.raft.proposals import ProposalQueue
from tierlog.raft.purgatory import FetchPurgatory
from tierlog.raft.quorum_store import ElectionState, QuorumStateStore
from tierlog.raft.requests import RequestManager
from tierlog.raft.retention import LogStartRetention
from tierlog.raft.snapshot_fetch import SnapshotFetcher
from tierlog.raft.snapshots import SnapshotStore, SnapshotWriter
from tierlog.raft.state import (
    Candidate,
    Follower,
    Leader,
    Prospective,
    QuorumState,
    Resigned,
    Unattached,
)
from tierlog.raft.types import (
    Err,
    LeaderAndEpoch,
    NotLeaderError,
    OffsetAndEpoch,
    QuorumInfo,
    RaftConfig,
)
from tierlog.raft.voter_changes import VoterChanges, describe
from tierlog.raft.voter_log import VoterLog
from tierlog.raft.voters import Endpoint, VoterSet

__all__ = ["Output", "RaftNode", "RequestOutcome"]

NEVER = 1 << 62


@dataclass
class Output:
    """What the shell must do after a call: persist first, then send.

    quorum_state: write this ElectionState durably (QuorumStateStore.write) first.
    flush_log_to: flush the log (ReplicatedLog.flush) so offsets below this are
        durable first; then call handle_log_flushed.
    sends: (destination node id, request) pairs to send once the above (and every
        earlier Output's persistence) is durable; pass the very same request object
        back to handle_response / handle_send_failure.
    responses: (token, response) for fetches parked by an earlier handle_request;
        like the immediate answer of handle_request, sent after persisting.
    committed: what became committed, to apply in this order after the Output's
        persistence or alongside it (raft/committed.py): batches, snapshots to load,
        leader changes. Committed data is durable on a majority already.
    next_deadline_ms: call tick() no later than this.
    """

    sends: list[tuple[int, object]] = field(default_factory=list)
    responses: list[tuple[int, object]] = field(default_factory=list)
    next_deadline_ms: int = NEVER
    quorum_state: ElectionState | None = None
    flush_log_to: int | None = None
    committed: list[Committed] = field(default_factory=list)

    @property
    def must_persist(self) -> bool:
        return self.quorum_state is not None or self.flush_log_to is not None


@dataclass
class RequestOutcome:
    """``response`` is the answer to send now, or None when the request is parked under
    ``token``: its answer comes later in some ``Output.responses`` as (token, response).
    ``output`` is what the call produced besides (sends, other parked answers)."""

    response: object | None
    token: int | None
    output: Output


class RaftNode:
    def __init__(self, node_id: int, voters: frozenset[int] | VoterSet, log: ReplicatedLog,
                 snapshots: SnapshotStore, quorum_store: QuorumStateStore, config: RaftConfig, rng: random.Random,
                 now_ms: int, *, clock: Callable[[], float] | None = None, directory_id: bytes | None = None,
                 bootstrap_ids: Sequence[int] = (), kraft_version: int | None = None,
                 endpoints: tuple[Endpoint, ...] = ()):
        """``voters``: a frozenset of ids is kraft.version 0, the static
        controller.quorum.voters; a VoterSet is kraft.version 1 (KIP-853), the bootstrap
        set (empty for a controller that joins a running quorum), overridden by the
        VotersRecords in the log. ``directory_id`` is this replica's metadata directory
        id; ``bootstrap_ids`` are asked for the leader while no voter is known
        (controller.quorum.bootstrap.servers). ``kraft_version`` 0 with a VoterSet: the
        static voters with their endpoints (for DescribeQuorum). ``endpoints``: where this
        replica serves (its controller listeners; KIP-853 UpdateRaftVoter, LeaderEndpoints)."""
        self.node_id = node_id
        if kraft_version is None:
            kraft_version = 1 if isinstance(voters, VoterSet) else 0
        self.kraft_version = kraft_version
        bootstrap = voters if isinstance(voters, VoterSet) else VoterSet.of_ids(voters)
        self.directory_id = directory_id
        self.bootstrap_ids = tuple(bootstrap_ids)
        self.log = log
        self.snapshots = snapshots
        self.config = config
        self.rng = rng
        self._clock = clock  # seconds; latency metrics only
        self.metrics: dict[str, float] = {
            "GenSnapshotLatencyMs": 0.0, "LoadSnapshotLatencyMs": 0.0, "SnapshotSizeBytes": 0,
            "snapshots-generated": 0, "snapshots-loaded": 0, "snapshots-fetched": 0,
            "invalid-log-resets": 0, "elections-started": 0, "elections-won": 0,
            "diverging-truncations": 0, "log-start-advances": 0,
        }
        self._out = Output()
        self._deadline = NEVER
        self._flush_to: int | None = None
        self.requests = RequestManager(config.request_timeout_ms, config.retry_backoff_ms, self._wake)
        self.purgatory = FetchPurgatory(config.fetch_max_wait_ms)
        self.proposals = ProposalQueue(config.append_linger_ms, config.max_batch_records)
        self.snapshot_fetcher = SnapshotFetcher(snapshots, config.snapshot_chunk_bytes, self.metrics)
        self.retention = LogStartRetention(log, snapshots, self.metrics, now_ms)
        self.retention.validate_at_startup()
        self.voter_log = VoterLog(bootstrap, log, snapshots, dynamic=self.kraft_version == 1)
        self.voter_log.rebuild()
        self.commits = CommitDelivery(log, snapshots, self.metrics, lambda: self.is_leader, clock)
        self.quorum = QuorumState(node_id, self.voter_log.history, quorum_store, config, rng, now_ms,
                                  directory_id=directory_id, dynamic=self.kraft_version == 1,
                                  high_watermark=lambda: self.commits.high_watermark)
        self.commits.start()
        self.leader_fetch = LeaderFetch(config, log, snapshots, self.quorum, self.commits, self.purgatory,
                                        self.proposals, lambda token, r: self._out.responses.append((token, r)),
                                        self._request_flush)
        self.election = Election(node_id, config, rng, log, self.quorum, self.requests, self.snapshot_fetcher,
                                 observe_leader=self._observe_leader, become_unattached=self._become_unattached,
                                 become_leader=self._become_leader, become_candidate=self._become_candidate)
        self.follower_fetch = FollowerFetch(node_id, config, log, self.quorum, self.requests, self.snapshot_fetcher,
                                            self.retention, self.commits, self.metrics, self._request_flush,
                                            self.voter_log)
        self.voter_changes = VoterChanges(config, log, self.quorum, self.voter_log, self.commits, self.leader_fetch,
                                          self.kraft_version, self._voters_written, node_id, directory_id,
                                          endpoints)
        self.add_voter, self.remove_voter = self.voter_changes.add, self.voter_changes.remove
        self.update_voter, self.voter_change_committed = self.voter_changes.update, self.voter_changes.committed
        # KIP-853: where the leader serves; what to send in UpdateRaftVoter (None: nothing)
        self.leader_endpoints, self.endpoints_to_update = self.voter_changes.leader_endpoints, self.voter_changes.to_update
        self._notify_leader_change()
        self._out.next_deadline_ms = now_ms  # the shell calls tick(now_ms) right after construction

    # ------------------------------------------------------------------ queries

    @property
    def voters(self) -> frozenset[int]:
        """The ids of the voter set in effect (the latest in the log, KIP-853)."""
        return self.quorum.voters

    @property
    def voter_set(self) -> VoterSet:
        return self.voter_log.history.latest()

    @property
    def is_voter(self) -> bool:
        """In the voter set in effect (the latest in the log)."""
        return self.quorum.in_voter_set

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return self.quorum.leader_and_epoch()

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def state_name(self) -> str:
        return self.quorum.name

    @property
    def is_leader(self) -> bool:
        return isinstance(self.quorum.state, Leader)

    @property
    def high_watermark(self) -> int:
        return self.commits.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.start_offset

    @property
    def applied_offset(self) -> int:
        """Offsets below this have been handed out in ``Output.committed`` (snapshot or batches)."""
        return self.commits.applied_offset

    @property
    def next_deadline_ms(self) -> int:
        return self._out.next_deadline_ms

    def describe(self, now_ms: int) -> QuorumInfo:
        return describe(self.node_id, self.quorum, self.voter_set, self.high_watermark)

    # ------------------------------------------------------------------ public calls

    def tick(self, now_ms: int) -> Output:
        return self._finish(now_ms)

    def handle_request(self, sender_id: int, request: object, now_ms: int) -> RequestOutcome:
        token = None
        response: object | None
        if isinstance(request, VoteRequest):
            response = self.election.on_vote_request(request, now_ms)
        elif isinstance(request, BeginQuorumEpochRequest):
            response = self.election.on_begin_epoch(request, now_ms)
        elif isinstance(request, EndQuorumEpochRequest):
            response = self.election.on_end_epoch(request, now_ms)
        elif isinstance(request, FetchRequest):
            response = self.leader_fetch.on_fetch(request, now_ms, may_park=True)
            if response is None:
                token = self.purgatory.park(sender_id, request, now_ms)
            self.voter_changes.fetched(request.replica_id, now_ms)   # KIP-853: an update waiting for it
        elif isinstance(request, FetchSnapshotRequest):
            response = self.leader_fetch.on_fetch_snapshot(request, now_ms)
        else:
            raise TypeError(f"not a quorum request: {request!r}")
        return RequestOutcome(response, token, self._finish(now_ms))

    def handle_response(self, sender_id: int, request: object, response: object, now_ms: int) -> Output:
        matched = self.requests.answered(sender_id, request)
        if matched and getattr(response, "error", Err.NONE) != Err.NONE:
            self.requests.backoff(sender_id, now_ms)
        leader_epoch = getattr(response, "leader_epoch", None)
        if leader_epoch is not None:
            self._observe_leader(_leader(getattr(response, "leader_id", None)), leader_epoch, now_ms)
        if not matched:
            return self._finish(now_ms)
        s = self.quorum.state
        if (isinstance(s, Prospective) and isinstance(response, (FetchResponse, FetchSnapshotResponse))
                and sender_id == s.left_leader and response.leader_id == sender_id
                and response.leader_epoch == s.epoch):
            self._become_follower(s.epoch, sender_id, now_ms)   # the leader we missed answers again
        # the request manager matched the answer to its request, so the pairs below are the only ones
        if isinstance(response, VoteResponse) and isinstance(request, VoteRequest):
            self.election.on_vote_response(sender_id, request, response, now_ms)
        elif isinstance(response, BeginQuorumEpochResponse) and isinstance(request, BeginQuorumEpochRequest):
            self.election.on_begin_epoch_response(sender_id, request, response)
        elif isinstance(response, EndQuorumEpochResponse) and isinstance(request, EndQuorumEpochRequest):
            self.election.on_end_epoch_response(sender_id, request, response)
        elif isinstance(response, FetchResponse) and isinstance(request, FetchRequest):
            self.follower_fetch.on_fetch_response(sender_id, request, response, now_ms)
        elif isinstance(response, FetchSnapshotResponse) and isinstance(request, FetchSnapshotRequest):
            self.follower_fetch.on_fetch_snapshot_response(sender_id, request, response, now_ms)
        return self._finish(now_ms)

    def handle_log_flushed(self, now_ms: int) -> Output:
        """A flush asked for by an Output is done: a leader counts its flushed log."""
        s = self.quorum.state
        if isinstance(s, Leader):
            moved = s.progress.update_local(self.log.flushed_end_offset, now_ms)
            self.leader_fetch.progress_changed(moved, now_ms)
        return self._finish(now_ms)

    def handle_applied(self, applied_offset: int, now_ms: int) -> Output:
        """The shell applied what was handed out below ``applied_offset``: hand out more if
        that waited for it (``CommitDelivery.acknowledge``)."""
        self.commits.acknowledge(applied_offset)
        return self._finish(now_ms)

    def handle_send_failure(self, dest_id: int, request: object, now_ms: int) -> Output:
        self.requests.failed(dest_id, request, now_ms)
        return self._finish(now_ms)

    def propose(self, records: Sequence[bytes], now_ms: int, epoch: int | None = None) -> int:
        """Queue record values for the next batch; returns the offset of the last one.

        The batch is appended (and flushed) within append_linger_ms by tick(); call
        tick(now_ms) after proposing. The records commit when an Output's ``committed``
        carries them; a leader change in between may drop them. ``epoch``: raise
        NotLeaderError unless this node leads that epoch (Kafka's
        ``RaftClient.prepareAppend(epoch, records)``), so a state machine that has
        not applied a leader change yet cannot write in a newer term.
        """
        if not self.is_leader or (epoch is not None and epoch != self.epoch):
            raise NotLeaderError(self.leader_and_epoch)
        self.proposals.add(records, now_ms)
        return self.log.end_offset + len(self.proposals) - 1

    def resign(self, now_ms: int) -> Output:
        """Graceful shutdown: a leader resigns and tells the voters (EndQuorumEpoch)."""
        s = self.quorum.state
        if isinstance(s, Leader):
            self.leader_fetch.drain(now_ms)
            self._resign(s, now_ms)
        return self._finish(now_ms)

    def create_snapshot(self, end_offset: int, epoch: int, last_contained_ts_ms: int) -> SnapshotWriter | None:
        """A writer for snapshot (end_offset, epoch), or None when end_offset is above the
        high watermark, below the log begin offset, or the snapshot exists already.

        ``end_offset`` must be a batch end (``batch.last_offset + 1`` of a committed batch)
        and ``epoch`` that batch's epoch.
        """
        if end_offset > self.high_watermark or end_offset <= self.log.start_offset or end_offset <= 0:
            return None
        sid = OffsetAndEpoch(end_offset, epoch)
        if sid in self.snapshots.list():
            return None
        if not self.log.is_batch_boundary(end_offset) or self.log.epoch_of(end_offset - 1) != epoch:
            raise ValueError(f"snapshot {sid} does not end at a batch of epoch {epoch}")
        voters = self.voter_log.history.at(end_offset - 1) if self.kraft_version == 1 else None
        return SnapshotWriter(self.snapshots.create(sid), last_contained_ts_ms, self._on_snapshot_frozen,
                              self.config.max_batch_records, self._clock, voters)

    def _voters_written(self, now_ms: int) -> None:
        """The leader wrote a VotersRecord (voter_changes.py): it counts from now on, for the HW too."""
        self._voters_changed(now_ms)
        self._request_flush()
        self._wake(now_ms)

    def _voters_changed(self, now_ms: int) -> None:
        """The set in effect changed: fix the election timer; a leader moves progress."""
        self.quorum.voters_changed(now_ms)
        s = self.quorum.state
        if isinstance(s, Leader):
            self.leader_fetch.progress_changed(s.progress.set_voters(self.voters, now_ms), now_ms)

    def _on_snapshot_frozen(self, sid: OffsetAndEpoch, size: int, elapsed_ms: float) -> None:
        self.metrics["GenSnapshotLatencyMs"] = elapsed_ms
        self.metrics["SnapshotSizeBytes"] = size
        self.metrics["snapshots-generated"] += 1

    # ------------------------------------------------------------------ leader discovery

    def _observe_leader(self, leader_id: int | None, epoch: int, now_ms: int) -> None:
        """Learn a newer epoch, or the leader of the current one, from any message."""
        if leader_id is not None and leader_id not in self.voters and self.kraft_version == 0:
            leader_id = None
        if leader_id == self.node_id:
            if epoch > self.epoch and self.kraft_version == 1:
                # KIP-853: our id led it with another directory (this one's disk was wiped)
                self._become_unattached(epoch, now_ms)
                return
            assert epoch <= self.epoch, f"node {self.node_id}: told it leads future epoch {epoch}"
            return
        s = self.quorum.state
        if epoch > s.epoch:
            if leader_id is not None:
                self._become_follower(epoch, leader_id, now_ms)
            else:
                self._become_unattached(epoch, now_ms)
        elif epoch == s.epoch and leader_id is not None:
            if isinstance(s, Follower):
                assert s.leader_id == leader_id, f"two leaders in epoch {epoch}: {s.leader_id}, {leader_id}"
            elif isinstance(s, (Leader, Resigned)):
                raise AssertionError(f"node {self.node_id} led epoch {epoch} but {leader_id} claims it")
            elif isinstance(s, Prospective) and s.left_leader == leader_id:
                pass   # others still name the leader we stopped hearing from: not a new leader
            else:
                self._become_follower(epoch, leader_id, now_ms)

    # ------------------------------------------------------------------ transitions

    def _leaving_state(self) -> None:
        self.proposals.clear()
        self.requests.reset()

    def _after_transition(self, now_ms: int) -> None:
        self.leader_fetch.answer_parked(self.purgatory.take_all(), now_ms)

    def _become_unattached(self, epoch: int, now_ms: int) -> None:
        self._leaving_state()
        self.quorum.to_unattached(epoch, now_ms)
        self._after_transition(now_ms)

    def _become_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        self._leaving_state()
        self.quorum.to_follower(epoch, leader_id, now_ms)
        self._after_transition(now_ms)

    def _become_candidate(self, now_ms: int) -> None:
        self._leaving_state()
        self.quorum.to_candidate(now_ms)
        self.metrics["elections-started"] += 1
        self._after_transition(now_ms)

    def _stand(self, now_ms: int) -> None:
        """The leader is gone: stand for election; with kraft.version 1 after a pre-vote
        round (KIP-996), so a voter that cannot win never moves anyone's epoch."""
        if self.kraft_version == 1:
            self._leaving_state()
            self.quorum.to_prospective(now_ms)
            self._after_transition(now_ms)
        else:
            self._become_candidate(now_ms)

    def _become_leader(self, now_ms: int) -> None:
        self._leaving_state()
        self.snapshot_fetcher.abort()
        start = self.log.end_offset
        candidate = self.quorum.state
        assert isinstance(candidate, Candidate)
        granted = sorted(candidate.granted)
        progress = LeaderProgress(self.node_id, self.voters, start, self.high_watermark, self.config, now_ms)
        s = self.quorum.to_leader(start, progress)
        self.metrics["elections-won"] += 1
        value = leader_change_value(self.node_id, self.voters, granted)
        self.log.append_as_leader([value], s.epoch, now_ms, control=True)
        self.voter_changes.epoch_started(s.epoch, now_ms)   # KIP-853: the set, our endpoints
        self._request_flush()
        self.retention.leader_elected(now_ms)
        self.leader_fetch.progress_changed(progress.update_local(self.log.flushed_end_offset, now_ms), now_ms)
        self._after_transition(now_ms)

    def _resign(self, s: Leader, now_ms: int) -> None:
        successors = s.progress.preferred_successors()
        self._leaving_state()
        self.quorum.to_resigned(successors, now_ms)
        self._after_transition(now_ms)

    # ------------------------------------------------------------------ timers and sends

    def _finish(self, now_ms: int) -> Output:
        for _ in range(8):
            before = self.quorum.state
            self._poll(now_ms)
            if self.quorum.state is before:
                break
        self.commits.deliver()
        self._notify_leader_change()
        out, self._out = self._out, Output()
        out.committed, behind = self.commits.take()
        if behind:
            self._wake(now_ms)      # the rest of what is committed goes in the next Output
        out.next_deadline_ms = self._deadline
        out.quorum_state = self.quorum.take_unpersisted()
        out.flush_log_to, self._flush_to = self._flush_to, None
        self._out.next_deadline_ms = self._deadline
        return out

    def _notify_leader_change(self) -> None:
        s = self.quorum.state
        self.commits.notify_leader_change(self.leader_and_epoch,
                                          s.epoch_start_offset if isinstance(s, Leader) else None)

    def _request_flush(self) -> None:
        """The log's appends so far must be durable before anything sent from now on."""
        self._flush_to = self.log.end_offset

    def _wake(self, t: int) -> None:
        self._deadline = min(self._deadline, t)

    def _send(self, dest: int, request: object, now_ms: int) -> None:
        self.requests.sent(dest, request, now_ms)
        self._out.sends.append((dest, request))

    def _poll(self, now_ms: int) -> None:
        self._deadline = NEVER
        if self.voter_log.take_changed():
            self._voters_changed(now_ms)
        self.voter_log.history.prune_before(self.log.start_offset)
        self.requests.expire(now_ms)
        self.leader_fetch.answer_parked(self.purgatory.take_expired(now_ms), now_ms)
        for deadline in self.purgatory.deadlines():
            self._wake(deadline)
        s = self.quorum.state
        if isinstance(s, Leader):
            self._poll_leader(s, now_ms)
        elif isinstance(s, Candidate):
            self._poll_candidate(s, now_ms)
        elif isinstance(s, Follower):
            self._poll_follower(s, now_ms)
        elif isinstance(s, Unattached):
            self._poll_unattached(s, now_ms)
        elif isinstance(s, Prospective):
            self._poll_prospective(s, now_ms)
        else:
            self._poll_resigned(s, now_ms)

    def _poll_leader(self, s: Leader, now_ms: int) -> None:
        if self.proposals:
            due = self.proposals.due_ms()
            if due <= now_ms:
                self.leader_fetch.drain(now_ms)
            else:
                self._wake(due)
        if not s.progress.quorum_alive(now_ms):
            self._resign(s, now_ms)
            return
        if not self.quorum.in_voter_set and self.high_watermark > self.voter_log.history.latest_offset:
            self._resign(s, now_ms)   # KIP-853: our own removal committed; hand leadership over
            return
        self._wake(s.progress.check_quorum_deadline())
        wake = self.retention.advance_as_leader(s.progress, self.high_watermark, self.applied_offset, now_ms)
        if wake is not None:
            self._wake(wake)
        for v in sorted(self.voters - {self.node_id} - s.acked_begin):
            if self.requests.can_send(v, now_ms):
                voter = self.voter_set.get(v)
                self._send(v, BeginQuorumEpochRequest(self.config.cluster_id, self.node_id, s.epoch, v,
                                                      voter.directory_id if voter is not None else None,
                                                      self.voter_changes.endpoints), now_ms)

    def _poll_candidate(self, s: Candidate, now_ms: int) -> None:
        if len(s.granted) >= self.quorum.majority():
            self._become_leader(now_ms)
            return
        if s.backoff_until_ms is not None:
            if now_ms >= s.backoff_until_ms:
                self._stand(now_ms)
                return
            self._wake(s.backoff_until_ms)
            return
        if now_ms >= s.election_deadline_ms:
            self._wake(self.election.start_backoff(s, now_ms))
            return
        self._wake(s.election_deadline_ms)
        for v in sorted(self.voters - {self.node_id} - s.granted - s.rejected):
            if self.requests.can_send(v, now_ms):
                self._send(v, self.election.vote_request(s, v), now_ms)

    def _poll_prospective(self, s: Prospective, now_ms: int) -> None:
        if len(s.granted) >= self.quorum.majority():
            self._become_candidate(now_ms)
            return
        if not self.quorum.is_voter:
            self._become_unattached(s.epoch, now_ms)   # removed meanwhile: wait as an observer
            return
        if now_ms >= s.election_deadline_ms:
            self._stand(now_ms)   # a new pre-vote round
            return
        self._wake(s.election_deadline_ms)
        for v in sorted(self.voters - {self.node_id} - s.granted - s.rejected):
            if self.requests.can_send(v, now_ms):
                self._send(v, self.election.vote_request(s, v), now_ms)
        # KIP-996: keep asking the leader we stopped hearing from; if it answers, follow it again
        if s.left_leader is not None and self.requests.can_send(s.left_leader, now_ms):
            self._send(s.left_leader, self.follower_fetch.fetch_request(s.epoch), now_ms)

    def _poll_follower(self, s: Follower, now_ms: int) -> None:
        if now_ms >= s.fetch_deadline_ms:
            if self.quorum.is_voter:
                self._stand(now_ms)
            else:
                self._become_unattached(s.epoch, now_ms)
            return
        self._wake(s.fetch_deadline_ms)
        if self.requests.can_send(s.leader_id, now_ms):
            self._send(s.leader_id, self.follower_fetch.fetch_request(s.epoch), now_ms)

    def _poll_unattached(self, s: Unattached, now_ms: int) -> None:
        if self.quorum.is_voter:
            if s.election_deadline_ms is None:   # became a voter (KIP-853): start the timer
                self.quorum.voters_changed(now_ms)
            assert s.election_deadline_ms is not None
            if now_ms >= s.election_deadline_ms:
                self._stand(now_ms)
                return
            self._wake(s.election_deadline_ms)
            return
        ask = self.voters - {self.node_id} or frozenset(self.bootstrap_ids) - {self.node_id}
        if not ask:
            return
        target = self.requests.send_to_any(ask, self.rng, now_ms)  # observer: find the leader
        if target is not None:
            self._send(target, self.follower_fetch.fetch_request(s.epoch), now_ms)

    def _poll_resigned(self, s: Resigned, now_ms: int) -> None:
        if now_ms >= s.election_deadline_ms:
            if self.quorum.is_voter:
                self._stand(now_ms)
            else:   # removed from the voters (KIP-853): wait for the next leader as an observer
                self._leaving_state()
                self.quorum.to_observer_after_removal(now_ms)
                self._after_transition(now_ms)
            return
        self._wake(s.election_deadline_ms)
        for v in sorted(self.voters - {self.node_id} - s.acked_end):
            if self.requests.can_send(v, now_ms):
                self._send(v, EndQuorumEpochRequest(self.config.cluster_id, self.node_id, s.epoch,
                                                    s.preferred_successors), now_ms)


_id = leader_id_or_none


def _leader(leader_id: int | None) -> int | None:
    return None if leader_id is None or leader_id < 0 else leader_id
