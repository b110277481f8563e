"""RaftNode: one replica of the metadata quorum, sans-IO.

The shell (asyncio in a real process, the simulator in tests) calls:

- ``handle_request(sender_id, request, now_ms) -> RequestOutcome``
- ``handle_response(sender_id, request, response, now_ms) -> Output``
- ``handle_send_failure(dest_id, request, now_ms) -> Output``
- ``tick(now_ms) -> Output`` at ``Output.next_deadline_ms`` at the latest
- ``propose(records, now_ms) -> int``, ``resign(now_ms) -> Output``,
  ``create_snapshot(end_offset, epoch, last_contained_ts_ms)``, ``describe(now_ms)``

Durability contract: when any of these returns, everything the returned Output
depends on is already durable (quorum-state written and synced, log appends flushed
before they count towards the high watermark or are acknowledged by a fetch,
truncations and snapshots durable). The shell sends and answers right away.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tierlog.raft.codec import leader_change_value
from tierlog.raft.fetch import DIVERGING, SNAPSHOT, truncation_offset, validate_fetch
from tierlog.raft.leader import LeaderProgress
from tierlog.raft.listener import CommittedBatch, QuorumInfo, RaftListener, ReplicaInfo
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
from tierlog.raft.quorum_store import QuorumStateStore
from tierlog.raft.snapshots import (
    InvalidSnapshotError,
    RawSnapshotWriter,
    SnapshotReader,
    SnapshotStore,
    SnapshotWriter,
)
from tierlog.raft.state import (
    Candidate,
    Follower,
    Leader,
    QuorumState,
    Resigned,
    Unattached,
)
from tierlog.raft.types import (
    Err,
    LeaderAndEpoch,
    NotLeaderError,
    OffsetAndEpoch,
    RaftConfig,
)
from tierlog.raft.vote import (
    EMPTY_LOG,
    election_backoff_ms,
    end_epoch_backoff_ms,
    may_grant,
)

__all__ = ["Output", "RaftNode", "RequestOutcome"]

NEVER = 1 << 62


@dataclass
class Output:
    """What the shell must do after a call. Everything it depends on is already durable.

    sends: (destination node id, request) pairs to send now; pass the very same
        request object back to handle_response / handle_send_failure.
    responses: (token, response) for fetches parked by an earlier handle_request.
    next_deadline_ms: call tick() no later than this.
    """

    sends: list[tuple[int, object]] = field(default_factory=list)
    responses: list[tuple[int, object]] = field(default_factory=list)
    next_deadline_ms: int = NEVER


@dataclass
class RequestOutcome:
    """``response`` is the answer to send now, or None when the request is parked under
    ``token``: its answer comes later in some ``Output.responses`` as (token, response).
    ``output`` is what the call produced besides (sends, other parked answers)."""

    response: object | None
    token: int | None
    output: Output


@dataclass
class _SnapshotFetch:
    snapshot_id: OffsetAndEpoch
    writer: RawSnapshotWriter
    position: int = 0


@dataclass
class _Parked:
    sender_id: int
    request: FetchRequest
    deadline_ms: int


class RaftNode:
    def __init__(self, node_id: int, voters: frozenset[int], log: ReplicatedLog, snapshots: SnapshotStore,
                 quorum_store: QuorumStateStore, config: RaftConfig, rng: random.Random,
                 listener: RaftListener, now_ms: int, *, clock: Callable[[], float] | None = None):
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.log = log
        self.snapshots = snapshots
        self.config = config
        self.rng = rng
        self.listener = listener
        self._clock = clock  # seconds; latency metrics only
        self.metrics: dict[str, float] = {
            "GenSnapshotLatencyMs": 0.0, "LoadSnapshotLatencyMs": 0.0, "SnapshotSizeBytes": 0,
            "snapshots-generated": 0, "snapshots-loaded": 0, "snapshots-fetched": 0,
            "invalid-log-resets": 0, "elections-started": 0, "elections-won": 0,
            "diverging-truncations": 0, "log-start-advances": 0,
        }
        self._out = Output()
        self._inflight: dict[int, tuple[object, int]] = {}
        self._retry_at: dict[int, int] = {}
        self._parked: dict[int, _Parked] = {}
        self._next_token = 1
        self._pending: list[bytes] = []
        self._pending_since = 0
        self._snapshot_fetch: _SnapshotFetch | None = None
        self._leader_lbo = 0  # the leader's LBO as last seen by a follower
        self._lbo_since_ms = now_ms
        self._notified: LeaderAndEpoch | None = None
        self._deadline = NEVER
        self._validate_log_and_snapshots()
        self.quorum = QuorumState(node_id, self.voters, quorum_store, config, rng, now_ms)
        self._hw = log.start_offset
        self._applied = 0
        latest = snapshots.latest()
        if latest is not None:
            self._load_snapshot(latest)
        self._hw = max(self._hw, self._applied)
        self._notify_leader_change()
        self._out.next_deadline_ms = now_ms  # the shell calls tick(now_ms) right after construction

    # ------------------------------------------------------------------ queries

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
        return self._hw

    @property
    def log_start_offset(self) -> int:
        return self.log.start_offset

    @property
    def applied_offset(self) -> int:
        """Offsets below this have been given to the listener (snapshot or commits)."""
        return self._applied

    @property
    def next_deadline_ms(self) -> int:
        return self._out.next_deadline_ms

    def describe(self, now_ms: int) -> QuorumInfo:
        s = self.quorum.state
        if not isinstance(s, Leader):
            return QuorumInfo(Err.NOT_LEADER_OR_FOLLOWER, _id(self.leader_and_epoch.leader_id), s.epoch,
                              self._hw, [], [])
        prog: LeaderProgress = s.progress

        def info(p):
            return ReplicaInfo(p.replica_id, p.end_offset, p.last_fetch_ms, p.last_caught_up_ms)

        return QuorumInfo(Err.NONE, self.node_id, s.epoch, self._hw,
                          [info(p) for _, p in sorted(prog.voters.items())],
                          [info(p) for _, p in sorted(prog.observers.items())])

    # ------------------------------------------------------------------ start-up

    def _validate_log_and_snapshots(self) -> None:
        """KIP-630 'Validation of Snapshot and Log', checked before anything else.

        The log must begin at a snapshot (or at 0) and agree with the latest snapshot.
        A snapshot newer than the log restarts the log at it; a log whose begin offset
        no snapshot covers is treated as empty (the replica bootstraps from the leader).
        """
        log, ids = self.log, self.snapshots.list()
        latest = ids[-1] if ids else None
        disagrees = latest is not None and latest.offset >= log.start_offset and (
            latest.offset > log.end_offset or not log.is_batch_boundary(latest.offset)
            or log.epoch_of(latest.offset - 1) != latest.epoch)
        if disagrees:  # the snapshot is committed state: the log restarts at it
            log.truncate_fully_and_start_at(latest.offset, latest.epoch)
        start = log.start_offset
        if start > 0 and not any(start <= s.offset <= log.end_offset for s in ids):
            self.metrics["invalid-log-resets"] += 1
            log.truncate_fully_and_start_at(0, 0)
            for s in ids:
                self.snapshots.delete(s)
            return
        if start > 0:
            first = min(s for s in ids if start <= s.offset <= log.end_offset)
            if first.offset != start:
                log.delete_before(first.offset, first.epoch)
        self._delete_snapshots_below(log.start_offset)

    def _load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        assert not isinstance(self.quorum.state, Leader), f"node {self.node_id}: a leader never loads a snapshot"
        data = self.snapshots.read_all(snapshot_id)
        assert data is not None
        reader = SnapshotReader(snapshot_id, data)
        started = self._clock() if self._clock else 0.0
        self.listener.handle_load_snapshot(reader)
        if self._clock:
            self.metrics["LoadSnapshotLatencyMs"] = (self._clock() - started) * 1000.0
        self.metrics["snapshots-loaded"] += 1
        self.metrics["SnapshotSizeBytes"] = reader.size_bytes
        self._applied = snapshot_id.offset

    # ------------------------------------------------------------------ public calls

    def tick(self, now_ms: int) -> Output:
        return self._finish(now_ms)

    def handle_request(self, sender_id: int, request: object, now_ms: int) -> RequestOutcome:
        token = None
        if isinstance(request, VoteRequest):
            response = self._on_vote_request(request, now_ms)
        elif isinstance(request, BeginQuorumEpochRequest):
            response = self._on_begin_epoch(request, now_ms)
        elif isinstance(request, EndQuorumEpochRequest):
            response = self._on_end_epoch(request, now_ms)
        elif isinstance(request, FetchRequest):
            response = self._on_fetch(sender_id, request, now_ms, may_park=True)
            if response is None:
                token = self._park(sender_id, request, now_ms)
        elif isinstance(request, FetchSnapshotRequest):
            response = self._on_fetch_snapshot(request, now_ms)
        else:
            raise TypeError(f"not a quorum request: {request!r}")
        return RequestOutcome(response, token, self._finish(now_ms))

    def handle_response(self, sender_id: int, request: object, response: object, now_ms: int) -> Output:
        current = self._inflight.get(sender_id)
        matched = current is not None and current[0] is request
        if matched:
            del self._inflight[sender_id]
            if getattr(response, "error", Err.NONE) != Err.NONE:
                self._retry_at[sender_id] = now_ms + self.config.retry_backoff_ms
        if hasattr(response, "leader_epoch"):
            self._observe_leader(_leader(response.leader_id), response.leader_epoch, now_ms)
        if matched:
            if isinstance(response, VoteResponse):
                self._on_vote_response(sender_id, request, response, now_ms)
            elif isinstance(response, BeginQuorumEpochResponse):
                self._on_begin_epoch_response(sender_id, request, response)
            elif isinstance(response, EndQuorumEpochResponse):
                self._on_end_epoch_response(sender_id, request, response)
            elif isinstance(response, FetchResponse):
                self._on_fetch_response(sender_id, request, response, now_ms)
            elif isinstance(response, FetchSnapshotResponse):
                self._on_fetch_snapshot_response(sender_id, request, response, now_ms)
        return self._finish(now_ms)

    def handle_send_failure(self, dest_id: int, request: object, now_ms: int) -> Output:
        current = self._inflight.get(dest_id)
        if current is not None and current[0] is request:
            del self._inflight[dest_id]
            self._retry_at[dest_id] = now_ms + self.config.retry_backoff_ms
            if isinstance(request, FetchRequest) and not self.quorum.is_voter:
                self._observer_target = None
        return self._finish(now_ms)

    def propose(self, records: Sequence[bytes], now_ms: int) -> int:
        """Queue record values for the next batch; returns the offset of the last one.

        The batch is appended (and flushed) within append_linger_ms by tick(); call
        tick(now_ms) after proposing. The records commit when handle_commit says so;
        a leader change in between may drop them.
        """
        s = self.quorum.state
        if not isinstance(s, Leader):
            raise NotLeaderError(self.leader_and_epoch)
        if not records:
            raise ValueError("propose needs at least one record")
        if not self._pending:
            self._pending_since = now_ms
        self._pending.extend(bytes(r) for r in records)
        return self.log.end_offset + len(self._pending) - 1

    def resign(self, now_ms: int) -> Output:
        """Graceful shutdown: a leader resigns and tells the voters (EndQuorumEpoch)."""
        s = self.quorum.state
        if isinstance(s, Leader):
            self._drain(now_ms)
            self._resign(s, now_ms)
        return self._finish(now_ms)

    def create_snapshot(self, end_offset: int, epoch: int, last_contained_ts_ms: int) -> SnapshotWriter | None:
        """A writer for snapshot (end_offset, epoch), or None when end_offset is above the
        high watermark, below the log begin offset, or the snapshot exists already.

        ``end_offset`` must be a batch end (``batch.last_offset + 1`` of a committed batch)
        and ``epoch`` that batch's epoch.
        """
        if end_offset > self._hw or end_offset <= self.log.start_offset or end_offset <= 0:
            return None
        sid = OffsetAndEpoch(end_offset, epoch)
        if sid in self.snapshots.list():
            return None
        if not self.log.is_batch_boundary(end_offset) or self.log.epoch_of(end_offset - 1) != epoch:
            raise ValueError(f"snapshot {sid} does not end at a batch of epoch {epoch}")
        return SnapshotWriter(self.snapshots.create(sid), last_contained_ts_ms, self._on_snapshot_frozen,
                              self.config.max_batch_records, self._clock)

    def _on_snapshot_frozen(self, sid: OffsetAndEpoch, size: int, elapsed_ms: float) -> None:
        self.metrics["GenSnapshotLatencyMs"] = elapsed_ms
        self.metrics["SnapshotSizeBytes"] = size
        self.metrics["snapshots-generated"] += 1

    # ------------------------------------------------------------------ leader discovery

    def _observe_leader(self, leader_id: int | None, epoch: int, now_ms: int) -> None:
        """Learn a newer epoch, or the leader of the current one, from any message."""
        if leader_id is not None and leader_id not in self.voters:
            leader_id = None
        if leader_id == self.node_id:
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
            else:
                self._become_follower(epoch, leader_id, now_ms)

    # ------------------------------------------------------------------ transitions

    def _leaving_leadership(self, now_ms: int) -> None:
        s = self.quorum.state
        if isinstance(s, Leader):
            self._pending.clear()
        self._inflight.clear()
        self._retry_at.clear()

    def _after_transition(self, now_ms: int) -> None:
        parked = list(self._parked.items())
        self._parked.clear()
        for token, p in parked:
            self._out.responses.append((token, self._on_fetch(p.sender_id, p.request, now_ms, may_park=False)))

    def _become_unattached(self, epoch: int, now_ms: int) -> None:
        self._leaving_leadership(now_ms)
        self.quorum.to_unattached(epoch, now_ms)
        self._after_transition(now_ms)

    def _become_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        self._leaving_leadership(now_ms)
        self.quorum.to_follower(epoch, leader_id, now_ms)
        self._after_transition(now_ms)

    def _become_candidate(self, now_ms: int) -> None:
        self._leaving_leadership(now_ms)
        self.quorum.to_candidate(now_ms)
        self.metrics["elections-started"] += 1
        self._after_transition(now_ms)

    def _become_leader(self, now_ms: int) -> None:
        self._leaving_leadership(now_ms)
        if self._snapshot_fetch is not None:
            self._abort_snapshot_fetch()
        start = self.log.end_offset
        granted = sorted(self.quorum.state.granted)
        s = self.quorum.to_leader(start)
        self.metrics["elections-won"] += 1
        value = leader_change_value(self.node_id, self.voters, granted)
        self.log.append_as_leader([value], s.epoch, now_ms, control=True)
        self.log.flush()
        s.progress = LeaderProgress(self.node_id, self.voters, start, self._hw, self.config, now_ms)
        self._lbo_since_ms = now_ms
        self._leader_progress_changed(s.progress.update_local(self.log.flushed_end_offset, now_ms), now_ms)
        self._after_transition(now_ms)

    def _resign(self, s: Leader, now_ms: int) -> None:
        successors = s.progress.preferred_successors()
        self._leaving_leadership(now_ms)
        self.quorum.to_resigned(successors, now_ms)
        self._after_transition(now_ms)

    # ------------------------------------------------------------------ Vote

    def _own_last(self) -> OffsetAndEpoch:
        if self._snapshot_fetch is not None:
            return EMPTY_LOG  # KIP-630: an incomplete snapshot votes as an empty log
        return OffsetAndEpoch(self.log.end_offset, self.log.last_fetched_epoch())

    def _on_vote_request(self, req: VoteRequest, now_ms: int) -> VoteResponse:
        if req.cluster_id != self.config.cluster_id:
            return self._vote_answer(Err.INCONSISTENT_CLUSTER_ID, False)
        if not self.quorum.is_voter or req.candidate_id not in self.voters:
            return self._vote_answer(Err.INCONSISTENT_VOTER_SET, False)
        if req.candidate_epoch < self.epoch:
            return self._vote_answer(Err.FENCED_LEADER_EPOCH, False)
        if req.candidate_epoch > self.epoch:
            self._become_unattached(req.candidate_epoch, now_ms)
        cand = OffsetAndEpoch(req.last_offset, req.last_offset_epoch)
        s = self.quorum.state
        grant = may_grant(s, req.candidate_id, cand, self._own_last())
        if grant and isinstance(s, Unattached) and s.voted_id is None:
            self.quorum.to_voted(req.candidate_id, now_ms)
        return self._vote_answer(Err.NONE, grant)

    def _vote_answer(self, error: int, granted: bool) -> VoteResponse:
        le = self.leader_and_epoch
        return VoteResponse(error, _id(le.leader_id), le.epoch, granted)

    def _on_vote_response(self, sender_id: int, req: VoteRequest, resp: VoteResponse, now_ms: int) -> None:
        s = self.quorum.state
        if not isinstance(s, Candidate) or req.candidate_epoch != s.epoch or resp.leader_epoch != s.epoch:
            return
        if resp.error != Err.NONE:
            self._retry_at[sender_id] = now_ms + self.config.retry_backoff_ms
            return
        if resp.vote_granted:
            s.granted.add(sender_id)
            if len(s.granted) >= self.quorum.majority():
                self._become_leader(now_ms)
        else:
            s.rejected.add(sender_id)
            if len(self.voters) - len(s.rejected) < self.quorum.majority() and s.backoff_until_ms is None:
                self._start_backoff(s, now_ms)

    def _start_backoff(self, s: Candidate, now_ms: int) -> None:
        s.backoff_until_ms = now_ms + election_backoff_ms(self.rng, s.retries, self.config.election_backoff_max_ms)

    # ------------------------------------------------------------------ Begin/EndQuorumEpoch

    def _epoch_answer(self, cls, error: int):
        le = self.leader_and_epoch
        return cls(error, _id(le.leader_id), le.epoch)

    def _on_begin_epoch(self, req: BeginQuorumEpochRequest, now_ms: int) -> BeginQuorumEpochResponse:
        if req.cluster_id != self.config.cluster_id:
            return self._epoch_answer(BeginQuorumEpochResponse, Err.INCONSISTENT_CLUSTER_ID)
        if req.leader_id not in self.voters:
            return self._epoch_answer(BeginQuorumEpochResponse, Err.INCONSISTENT_VOTER_SET)
        if req.leader_epoch < self.epoch:
            return self._epoch_answer(BeginQuorumEpochResponse, Err.FENCED_LEADER_EPOCH)
        self._observe_leader(req.leader_id, req.leader_epoch, now_ms)
        return self._epoch_answer(BeginQuorumEpochResponse, Err.NONE)

    def _on_begin_epoch_response(self, sender_id: int, req, resp: BeginQuorumEpochResponse) -> None:
        s = self.quorum.state
        if isinstance(s, Leader) and req.leader_epoch == s.epoch and resp.error == Err.NONE:
            s.acked_begin.add(sender_id)

    def _on_end_epoch(self, req: EndQuorumEpochRequest, now_ms: int) -> EndQuorumEpochResponse:
        if req.cluster_id != self.config.cluster_id:
            return self._epoch_answer(EndQuorumEpochResponse, Err.INCONSISTENT_CLUSTER_ID)
        if req.leader_id not in self.voters:
            return self._epoch_answer(EndQuorumEpochResponse, Err.INCONSISTENT_VOTER_SET)
        if req.leader_epoch < self.epoch:
            return self._epoch_answer(EndQuorumEpochResponse, Err.FENCED_LEADER_EPOCH)
        if req.leader_id != self.node_id:
            self._observe_leader(req.leader_id, req.leader_epoch, now_ms)
        s = self.quorum.state
        if isinstance(s, Follower) and s.leader_id == req.leader_id and self.quorum.is_voter:
            backoff = end_epoch_backoff_ms(self.node_id, req.preferred_successors, self.config.election_backoff_max_ms)
            s.fetch_deadline_ms = min(s.fetch_deadline_ms, now_ms + backoff)
        return self._epoch_answer(EndQuorumEpochResponse, Err.NONE)

    def _on_end_epoch_response(self, sender_id: int, req, resp: EndQuorumEpochResponse) -> None:
        s = self.quorum.state
        if isinstance(s, Resigned) and req.leader_epoch == s.epoch and resp.error == Err.NONE:
            s.acked_end.add(sender_id)

    # ------------------------------------------------------------------ Fetch (leader side)

    def _leader_only_error(self, cluster_id: str, request_epoch: int) -> int:
        if cluster_id != self.config.cluster_id:
            return Err.INCONSISTENT_CLUSTER_ID
        if request_epoch < self.epoch:
            return Err.FENCED_LEADER_EPOCH
        if request_epoch > self.epoch:
            return Err.UNKNOWN_LEADER_EPOCH
        if not isinstance(self.quorum.state, Leader):
            return Err.NOT_LEADER_OR_FOLLOWER
        return Err.NONE

    def _fetch_answer(self, error: int, **kw) -> FetchResponse:
        le = self.leader_and_epoch
        return FetchResponse(error, _id(le.leader_id), le.epoch, **kw)

    def _on_fetch(self, sender_id: int, req: FetchRequest, now_ms: int, may_park: bool) -> FetchResponse | None:
        error = self._leader_only_error(req.cluster_id, req.current_leader_epoch)
        if error != Err.NONE:
            return self._fetch_answer(error)
        s: Leader = self.quorum.state  # type: ignore[assignment]
        log = self.log
        kind, diverging = validate_fetch(log, req.fetch_offset, req.last_fetched_epoch)
        common = {"high_watermark": self._hw, "log_start_offset": log.start_offset}
        if kind == SNAPSHOT:
            return self._fetch_answer(Err.NONE, snapshot_id=self.snapshots.latest(), **common)
        if kind == DIVERGING:
            return self._fetch_answer(Err.NONE, diverging_epoch=diverging, **common)
        if may_park:  # first receipt (not the completion of a parked fetch): record progress
            if req.replica_id in self.voters:
                s.acked_begin.add(req.replica_id)
            moved = s.progress.update_replica(req.replica_id, req.fetch_offset, log.end_offset, now_ms)
            self._leader_progress_changed(moved, now_ms)
        common["high_watermark"] = self._hw
        batches = log.read(req.fetch_offset, min(req.max_bytes, self.config.fetch_max_bytes))
        if not batches and may_park and req.max_wait_ms > 0:
            return None
        return self._fetch_answer(Err.NONE, batches=tuple(batches), **common)

    def _park(self, sender_id: int, req: FetchRequest, now_ms: int) -> int:
        token = self._next_token
        self._next_token += 1
        wait = min(req.max_wait_ms, self.config.fetch_max_wait_ms)
        self._parked[token] = _Parked(sender_id, req, now_ms + wait)
        return token

    def _complete_parked(self, now_ms: int, only_expired: bool) -> None:
        due = [t for t, p in self._parked.items() if not only_expired or p.deadline_ms <= now_ms]
        parked = [(t, self._parked.pop(t)) for t in due]
        for token, p in parked:
            self._out.responses.append((token, self._on_fetch(p.sender_id, p.request, now_ms, may_park=False)))

    def _on_fetch_snapshot(self, req: FetchSnapshotRequest, now_ms: int) -> FetchSnapshotResponse:
        error = self._leader_only_error(req.cluster_id, req.current_leader_epoch)
        le = self.leader_and_epoch
        if error != Err.NONE:
            return FetchSnapshotResponse(error, _id(le.leader_id), le.epoch)
        s: Leader = self.quorum.state  # type: ignore[assignment]
        s.progress.touch(req.replica_id, now_ms)
        size = self.snapshots.size(req.snapshot_id)
        if size is None:
            return FetchSnapshotResponse(Err.SNAPSHOT_NOT_FOUND, self.node_id, le.epoch, req.snapshot_id)
        if req.position < 0 or req.position > size:
            return FetchSnapshotResponse(Err.POSITION_OUT_OF_RANGE, self.node_id, le.epoch, req.snapshot_id, size)
        n = max(0, min(req.max_bytes, self.config.snapshot_chunk_bytes))
        data = self.snapshots.read(req.snapshot_id, req.position, n) or b""
        return FetchSnapshotResponse(Err.NONE, self.node_id, le.epoch, req.snapshot_id, size, req.position, data)

    def _leader_progress_changed(self, hw_moved: bool, now_ms: int) -> None:
        s = self.quorum.state
        if not isinstance(s, Leader):
            return
        if hw_moved and s.progress.high_watermark > self._hw:
            self._hw = s.progress.high_watermark
            self._deliver()
            self._complete_parked(now_ms, only_expired=False)

    def _drain(self, now_ms: int) -> None:
        """Append queued proposals as batches, flush, count our own progress."""
        s = self.quorum.state
        if not self._pending or not isinstance(s, Leader):
            return
        pending, self._pending = self._pending, []
        step = self.config.max_batch_records
        for i in range(0, len(pending), step):
            self.log.append_as_leader(pending[i:i + step], s.epoch, now_ms)
        self.log.flush()
        moved = s.progress.update_local(self.log.flushed_end_offset, now_ms)
        self._complete_parked(now_ms, only_expired=False)
        self._leader_progress_changed(moved, now_ms)

    def _maybe_advance_lbo_as_leader(self, s: Leader, now_ms: int) -> None:
        ids = self.snapshots.list()
        target = s.progress.lbo_target(ids, self.log.start_offset, self._lbo_since_ms, now_ms)
        if target is not None and self.log.is_batch_boundary(target.offset):
            self._advance_lbo(target, now_ms)
        elif any(self.log.start_offset < i.offset <= self._hw for i in ids):
            self._wake(s.progress.lbo_deadline(self._lbo_since_ms))

    def _advance_lbo(self, target: OffsetAndEpoch, now_ms: int) -> None:
        assert target.offset <= self._hw and target.offset <= self._applied
        self.log.delete_before(target.offset, target.epoch)
        self.metrics["log-start-advances"] += 1
        self._lbo_since_ms = now_ms
        self._delete_snapshots_below(target.offset)

    def _delete_snapshots_below(self, lbo: int) -> None:
        """KIP-630 'When to Delete Snapshots': any snapshot ending before the LBO goes."""
        for sid in self.snapshots.list():
            if sid.offset < lbo:
                self.snapshots.delete(sid)

    # ------------------------------------------------------------------ Fetch (follower side)

    def _fetch_request(self, s) -> object:
        sf = self._snapshot_fetch
        if sf is not None:
            return FetchSnapshotRequest(self.config.cluster_id, self.node_id, s.epoch, sf.snapshot_id,
                                        sf.position, self.config.snapshot_chunk_bytes)
        return FetchRequest(self.config.cluster_id, self.node_id, s.epoch, self.log.end_offset,
                            self.log.last_fetched_epoch(), self.log.start_offset,
                            self.config.fetch_max_wait_ms, self.config.fetch_max_bytes)

    def _following(self, sender_id: int, request_epoch: int) -> Follower | None:
        s = self.quorum.state
        if isinstance(s, Follower) and s.leader_id == sender_id and s.epoch == request_epoch:
            return s
        return None

    def _on_fetch_response(self, sender_id: int, req: FetchRequest, resp: FetchResponse, now_ms: int) -> None:
        s = self._following(sender_id, req.current_leader_epoch)
        if s is None or resp.error != Err.NONE:
            self._retry_at[sender_id] = now_ms + self.config.retry_backoff_ms
            if not self.quorum.is_voter and resp.error != Err.NONE:
                self._observer_target = None
            return
        s.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        self._retry_at[sender_id] = now_ms
        if resp.diverging_epoch is not None:
            offset = truncation_offset(self.log, resp.diverging_epoch)
            assert offset >= self._hw, f"node {self.node_id}: truncation to {offset} below high watermark {self._hw}"
            self.log.truncate_to(offset)
            self.metrics["diverging-truncations"] += 1
            return
        if resp.snapshot_id is not None:
            self._start_snapshot_fetch(resp.snapshot_id)
            return
        batches = [b for b in resp.batches if b.base_offset >= self.log.end_offset]
        if batches and batches[0].base_offset == self.log.end_offset:
            self.log.append_as_follower(batches)
            self.log.flush()  # durable before the next Fetch reports it to the leader
        elif resp.batches:  # nothing usable (a stale or misaligned answer): do not spin
            self._retry_at[sender_id] = now_ms + self.config.retry_backoff_ms
        self._leader_lbo = max(self._leader_lbo, resp.log_start_offset)
        self._follower_hw(resp.high_watermark)

    def _follower_hw(self, leader_hw: int) -> None:
        hw = min(leader_hw, self.log.end_offset)
        if hw > self._hw:
            self._hw = hw
            self._deliver()
        self._maybe_advance_lbo_as_follower()

    def _maybe_advance_lbo_as_follower(self) -> None:
        """Follow the leader's LBO up to our own latest snapshot that is not above it."""
        limit = min(self._leader_lbo, self._hw, self._applied)
        ids = [s for s in self.snapshots.list() if self.log.start_offset < s.offset <= limit
               and self.log.is_batch_boundary(s.offset) and self.log.epoch_of(s.offset - 1) == s.epoch]
        if ids:
            target = ids[-1]
            self.log.delete_before(target.offset, target.epoch)
            self.metrics["log-start-advances"] += 1
            self._delete_snapshots_below(target.offset)

    def _start_snapshot_fetch(self, sid: OffsetAndEpoch) -> None:
        if self._snapshot_fetch is not None:
            self._abort_snapshot_fetch()
        if sid in self.snapshots.list():  # we have it already: just restart the log there
            self._install_snapshot(sid)
            return
        self._snapshot_fetch = _SnapshotFetch(sid, self.snapshots.create(sid))

    def _abort_snapshot_fetch(self) -> None:
        sf, self._snapshot_fetch = self._snapshot_fetch, None
        if sf is not None:
            sf.writer.close()

    def _on_fetch_snapshot_response(self, sender_id: int, req: FetchSnapshotRequest,
                                    resp: FetchSnapshotResponse, now_ms: int) -> None:
        s = self._following(sender_id, req.current_leader_epoch)
        sf = self._snapshot_fetch
        if s is None or sf is None or sf.snapshot_id != req.snapshot_id or sf.position != req.position:
            return
        s.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        self._retry_at[sender_id] = now_ms
        if resp.error != Err.NONE or resp.snapshot_id != sf.snapshot_id or resp.position != sf.position \
                or (not resp.data and sf.position < resp.size):
            # SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, NOT_LEADER...: rediscover with Fetch
            self._abort_snapshot_fetch()
            self._retry_at[sender_id] = now_ms + self.config.retry_backoff_ms
            return
        sf.writer.append(resp.data)
        sf.position += len(resp.data)
        if sf.position >= resp.size:
            self.metrics["snapshots-fetched"] += 1
            self._snapshot_fetch = None
            sf.writer.freeze()
            try:
                SnapshotReader(sf.snapshot_id, self.snapshots.read_all(sf.snapshot_id) or b"")
            except InvalidSnapshotError:
                self.snapshots.delete(sf.snapshot_id)
                return
            self._install_snapshot(sf.snapshot_id)

    def _install_snapshot(self, sid: OffsetAndEpoch) -> None:
        """A complete snapshot from the leader: restart the log at it and load it."""
        assert not isinstance(self.quorum.state, Leader)
        self.log.truncate_fully_and_start_at(sid.offset, sid.epoch)
        self._delete_snapshots_below(sid.offset)
        if sid.offset > self._applied:
            self._load_snapshot(sid)
        self._hw = max(self._hw, sid.offset)

    # ------------------------------------------------------------------ commits

    def _deliver(self) -> None:
        """Give the listener every committed batch it has not seen, in order."""
        if self._applied < self.log.start_offset:
            latest = self.snapshots.latest()
            assert latest is not None and latest.offset >= self.log.start_offset
            self._load_snapshot(latest)
        while self._applied < self._hw:
            batches = self.log.read(self._applied, 8 << 20, end=self._hw)
            if not batches:
                break
            for b in batches:
                assert b.base_offset == self._applied, (b.base_offset, self._applied)
                if b.control:
                    batch = CommittedBatch(b.base_offset, b.last_offset, b.epoch, b.append_timestamp, [],
                                           True, list(b.records))
                else:
                    batch = CommittedBatch(b.base_offset, b.last_offset, b.epoch, b.append_timestamp,
                                           list(b.records))
                self._applied = b.next_offset
                self.listener.handle_commit(batch)

    # ------------------------------------------------------------------ timers and sends

    def _finish(self, now_ms: int) -> Output:
        for _ in range(8):
            before = self.quorum.state
            self._poll(now_ms)
            if self.quorum.state is before:
                break
        self._notify_leader_change()
        out, self._out = self._out, Output()
        out.next_deadline_ms = self._deadline
        self._out.next_deadline_ms = self._deadline
        return out

    def _notify_leader_change(self) -> None:
        le = self.leader_and_epoch
        s = self.quorum.state
        if isinstance(s, Leader) and self._applied <= s.epoch_start_offset:
            return  # tell the state machine it leads only once it has caught up
        if le != self._notified:
            self._notified = le
            self.listener.handle_leader_change(le)

    def _wake(self, t: int) -> None:
        self._deadline = min(self._deadline, t)

    def _send(self, dest: int, request: object, now_ms: int) -> None:
        self._inflight[dest] = (request, now_ms + self.config.request_timeout_ms)
        self._wake(now_ms + self.config.request_timeout_ms)
        self._out.sends.append((dest, request))

    def _can_send(self, dest: int, now_ms: int) -> bool:
        if dest in self._inflight:
            return False
        at = self._retry_at.get(dest, 0)
        if at > now_ms:
            self._wake(at)
            return False
        return True

    def _poll(self, now_ms: int) -> None:
        self._deadline = NEVER
        for dest, (_req, deadline) in list(self._inflight.items()):
            if deadline <= now_ms:
                del self._inflight[dest]
                self._retry_at[dest] = now_ms + self.config.retry_backoff_ms
                if not self.quorum.is_voter:
                    self._observer_target = None
            else:
                self._wake(deadline)
        self._complete_parked(now_ms, only_expired=True)
        for p in self._parked.values():
            self._wake(p.deadline_ms)
        s = self.quorum.state
        if isinstance(s, Leader):
            self._poll_leader(s, now_ms)
        elif isinstance(s, Candidate):
            self._poll_candidate(s, now_ms)
        elif isinstance(s, Follower):
            self._poll_follower(s, now_ms)
        elif isinstance(s, Unattached):
            self._poll_unattached(s, now_ms)
        else:
            self._poll_resigned(s, now_ms)

    def _poll_leader(self, s: Leader, now_ms: int) -> None:
        if self._pending:
            due = self._pending_since + self.config.append_linger_ms
            if due <= now_ms or len(self._pending) >= self.config.max_batch_records:
                self._drain(now_ms)
            else:
                self._wake(due)
        if not s.progress.quorum_alive(now_ms):
            self._resign(s, now_ms)
            return
        self._wake(s.progress.check_quorum_deadline())
        self._maybe_advance_lbo_as_leader(s, now_ms)
        for v in sorted(self.voters - {self.node_id} - s.acked_begin):
            if self._can_send(v, now_ms):
                self._send(v, BeginQuorumEpochRequest(self.config.cluster_id, self.node_id, s.epoch), now_ms)

    def _poll_candidate(self, s: Candidate, now_ms: int) -> None:
        if len(s.granted) >= self.quorum.majority():
            self._become_leader(now_ms)
            return
        if s.backoff_until_ms is not None:
            if now_ms >= s.backoff_until_ms:
                self._become_candidate(now_ms)
                return
            self._wake(s.backoff_until_ms)
            return
        if now_ms >= s.election_deadline_ms:
            self._start_backoff(s, now_ms)
            self._wake(s.backoff_until_ms)
            return
        self._wake(s.election_deadline_ms)
        last = self._own_last()
        for v in sorted(self.voters - {self.node_id} - s.granted - s.rejected):
            if self._can_send(v, now_ms):
                self._send(v, VoteRequest(self.config.cluster_id, s.epoch, self.node_id, last.epoch, last.offset),
                           now_ms)

    def _poll_follower(self, s: Follower, now_ms: int) -> None:
        if now_ms >= s.fetch_deadline_ms:
            if self.quorum.is_voter:
                self._become_candidate(now_ms)
            else:
                self._become_unattached(s.epoch, now_ms)
            return
        self._wake(s.fetch_deadline_ms)
        if self._can_send(s.leader_id, now_ms):
            self._send(s.leader_id, self._fetch_request(s), now_ms)

    _observer_target: int | None = None

    def _poll_unattached(self, s: Unattached, now_ms: int) -> None:
        if self.quorum.is_voter:
            assert s.election_deadline_ms is not None
            if now_ms >= s.election_deadline_ms:
                self._become_candidate(now_ms)
                return
            self._wake(s.election_deadline_ms)
            return
        # observer: find the leader by fetching from any voter
        if self._observer_target is None or self._observer_target not in self._inflight:
            candidates = sorted(self.voters)
            target = self.rng.choice(candidates)
            if self._can_send(target, now_ms):
                self._observer_target = target
                self._send(target, self._fetch_request(s), now_ms)

    def _poll_resigned(self, s: Resigned, now_ms: int) -> None:
        if now_ms >= s.election_deadline_ms:
            self._become_candidate(now_ms)
            return
        self._wake(s.election_deadline_ms)
        for v in sorted(self.voters - {self.node_id} - s.acked_end):
            if self._can_send(v, now_ms):
                self._send(v, EndQuorumEpochRequest(self.config.cluster_id, self.node_id, s.epoch,
                                                    s.preferred_successors), now_ms)


def _id(leader_id: int | None) -> int:
    return -1 if leader_id is None else leader_id


def _leader(leader_id: int) -> int | None:
    return None if leader_id is None or leader_id < 0 else leader_id

