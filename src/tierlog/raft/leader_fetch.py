"""The leader's side of replication: answering Fetch and FetchSnapshot, appending
proposals, and moving the high watermark.

Rules (KIP-595, KIP-630):

- Only the leader of the requester's epoch answers with data; otherwise the error
  says why (INCONSISTENT_CLUSTER_ID, FENCED_LEADER_EPOCH for an older epoch,
  UNKNOWN_LEADER_EPOCH for a newer one, NOT_LEADER_OR_FOLLOWER).
- A Fetch position below the log begin offset gets the latest SnapshotId, one that
  diverges gets the DivergingEpoch (fetch.py); neither counts as progress.
- A valid Fetch records the replica's progress (and, from a voter, that it knows
  the epoch), which may move the high watermark; with kraft.version 1 (KIP-853) only a
  replica whose directory id (Fetch's ReplicaDirectoryId) is not another one than the
  voter's of its id counts: a controller whose disk was wiped, still listed under its
  old directory, is answered but not counted until it is removed and added again; a Fetch with nothing to read
  waits in the FetchPurgatory, unless the replica's high watermark (KIP-1166, sent
  in the Fetch) is behind the leader's: then it is answered at once, so a replica
  whose fetch arrives just after the high watermark moved does not wait out
  ``fetch_max_wait_ms`` to learn of it (the 500 ms metadata propagation delay).
- The leader's own log counts towards the high watermark only once flushed (the
  shell flushes what ``drain`` appended, then RaftNode.handle_log_flushed), and
  only offsets of its own epoch commit (LeaderProgress).
- When the high watermark moves or the log grows, every parked Fetch is answered.
- A FetchSnapshot counts as contact for check-quorum; it is answered with at most
  ``snapshot_chunk_bytes`` from the requested position.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict, Unpack

from tierlog.raft.commits import CommitDelivery
from tierlog.raft.fetch import DIVERGING, SNAPSHOT, validate_fetch
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.messages import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
)
from tierlog.raft.proposals import ProposalQueue
from tierlog.raft.purgatory import FetchPurgatory, ParkedFetch
from tierlog.raft.snapshots import SnapshotStore
from tierlog.raft.state import Leader, QuorumState
from tierlog.raft.types import Err, LogBatch, OffsetAndEpoch, RaftConfig

__all__ = ["LeaderFetch", "leader_id_or_none"]


def leader_id_or_none(leader_id: int | None) -> int:
    return -1 if leader_id is None else leader_id


class _LogRange(TypedDict):
    """The FetchResponse fields every answer of a valid fetch carries."""

    high_watermark: int
    log_start_offset: int


class _AnswerFields(TypedDict, total=False):
    """The FetchResponse fields an answer sets besides the error and the leader."""

    high_watermark: int
    log_start_offset: int
    batches: tuple[LogBatch, ...]
    diverging_epoch: OffsetAndEpoch | None
    snapshot_id: OffsetAndEpoch | None


class LeaderFetch:
    def __init__(self, config: RaftConfig, log: ReplicatedLog, snapshots: SnapshotStore, quorum: QuorumState,
                 commits: CommitDelivery, purgatory: FetchPurgatory, proposals: ProposalQueue,
                 respond: Callable[[int, object], None], request_flush: Callable[[], None]):
        self._config = config
        self._log = log
        self._snapshots = snapshots
        self._quorum = quorum
        self._commits = commits
        self._purgatory = purgatory
        self._proposals = proposals
        self._respond = respond  # (token, response) of a parked Fetch
        self._request_flush = request_flush

    def _error(self, cluster_id: str, request_epoch: int) -> int:
        if cluster_id != self._config.cluster_id:
            return Err.INCONSISTENT_CLUSTER_ID
        epoch = self._quorum.epoch
        if request_epoch < epoch:
            return Err.FENCED_LEADER_EPOCH
        if request_epoch > epoch:
            return Err.UNKNOWN_LEADER_EPOCH
        if not isinstance(self._quorum.state, Leader):
            return Err.NOT_LEADER_OR_FOLLOWER
        return Err.NONE

    def _answer(self, error: int, **kw: Unpack[_AnswerFields]) -> FetchResponse:
        le = self._quorum.leader_and_epoch()
        return FetchResponse(error, leader_id_or_none(le.leader_id), le.epoch, **kw)

    def on_fetch(self, req: FetchRequest, now_ms: int, may_park: bool) -> FetchResponse | None:
        """The answer, or None when the Fetch should be parked (only when ``may_park``)."""
        error = self._error(req.cluster_id, req.current_leader_epoch)
        if error != Err.NONE:
            return self._answer(error)
        s: Leader = self._quorum.state  # type: ignore[assignment]
        log = self._log
        kind, diverging = validate_fetch(log, req.fetch_offset, req.last_fetched_epoch)
        common: _LogRange = {"high_watermark": self._commits.high_watermark, "log_start_offset": log.start_offset}
        if kind == SNAPSHOT:
            return self._answer(Err.NONE, snapshot_id=self._snapshots.latest(), **common)
        if kind == DIVERGING:
            return self._answer(Err.NONE, diverging_epoch=diverging, **common)
        if may_park and self._same_replica(req):  # first receipt (not a parked fetch's completion)
            if req.replica_id in self._quorum.voters:
                self._quorum.ack_begin_epoch(req.replica_id)
            moved = s.progress.update_replica(req.replica_id, req.fetch_offset, log.end_offset, now_ms)
            self.progress_changed(moved, now_ms)
        common["high_watermark"] = self._commits.high_watermark
        batches = log.read(req.fetch_offset, min(req.max_bytes, self._config.fetch_max_bytes))
        knows_hw = req.high_watermark >= common["high_watermark"]
        if not batches and may_park and req.max_wait_ms > 0 and knows_hw:
            return None
        return self._answer(Err.NONE, batches=tuple(batches), **common)

    def _same_replica(self, req: FetchRequest) -> bool:
        """Not a replica that took a voter's id with another directory (KIP-853)."""
        voter = self._quorum.history.latest().get(req.replica_id) if self._quorum.dynamic else None
        return voter is None or req.replica_directory_id is None or voter.matches(req.replica_id,
                                                                                   req.replica_directory_id)

    def answer_parked(self, parked: list[ParkedFetch], now_ms: int) -> None:
        for p in parked:
            self._respond(p.token, self.on_fetch(p.request, now_ms, may_park=False))

    def on_fetch_snapshot(self, req: FetchSnapshotRequest, now_ms: int) -> FetchSnapshotResponse:
        error = self._error(req.cluster_id, req.current_leader_epoch)
        le = self._quorum.leader_and_epoch()
        if error != Err.NONE:
            return FetchSnapshotResponse(error, leader_id_or_none(le.leader_id), le.epoch)
        s: Leader = self._quorum.state  # type: ignore[assignment]
        s.progress.touch(req.replica_id, now_ms)
        me, sid = le.leader_id, req.snapshot_id
        size = self._snapshots.size(sid)
        if size is None:
            return FetchSnapshotResponse(Err.SNAPSHOT_NOT_FOUND, me, le.epoch, sid)
        if req.position < 0 or req.position > size:
            return FetchSnapshotResponse(Err.POSITION_OUT_OF_RANGE, me, le.epoch, sid, size)
        n = max(0, min(req.max_bytes, self._config.snapshot_chunk_bytes))
        data = self._snapshots.read(sid, req.position, n) or b""
        return FetchSnapshotResponse(Err.NONE, me, le.epoch, sid, size, req.position, data)

    def progress_changed(self, hw_moved: bool, now_ms: int) -> None:
        s = self._quorum.state
        if hw_moved and isinstance(s, Leader) and self._commits.raise_to(s.progress.high_watermark):
            self.answer_parked(self._purgatory.take_all(), now_ms)

    def wake_parked(self, now_ms: int) -> None:
        """Answer every parked Fetch now (the leader appended outside ``drain``)."""
        self.answer_parked(self._purgatory.take_all(), now_ms)

    def drain(self, now_ms: int) -> None:
        """Append queued proposals as batches and ask for a flush; parked fetches get them.
        (Followers may replicate before the leader's flush; the leader counts itself
        once the flush is done: RaftNode.handle_log_flushed.)"""
        s = self._quorum.state
        if not self._proposals or not isinstance(s, Leader):
            return
        for records in self._proposals.take_batches():
            self._log.append_as_leader(records, s.epoch, now_ms)
        self._request_flush()
        self.answer_parked(self._purgatory.take_all(), now_ms)
