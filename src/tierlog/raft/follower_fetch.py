"""The follower's fetch loop: what it asks its leader and what it does with the answers.

Rules (KIP-595 Fetch, KIP-630 snapshots):

- A follower asks for records from its log end with the epoch of its last record
  (``fetch_request``), or for the next snapshot chunk while downloading one.
- Only a good answer from the leader of the follower's own epoch counts: it resets
  the fetch timeout and lets the next Fetch go at once. Anything else backs off.
- DivergingEpoch: truncate to the end of the common epoch (never below the high
  watermark) and fetch again. SnapshotId: download that snapshot (SnapshotFetcher),
  or install it when already held.
- Records are appended only when they continue the log exactly, and flushed (by the
  shell, off its event loop) before the next Fetch reports the new end to the
  leader; an answer with nothing usable
  backs off rather than spin.
- The high watermark becomes min(leader's high watermark, own log end), possibly
  before this replica's flush of those records: they are committed, i.e. durable
  on a majority, and a crash only makes it fetch them again. The log begin offset
  follows the leader's (LogStartRetention).
"""

from __future__ import annotations

from collections.abc import Callable

from tierlog.raft.commits import CommitDelivery
from tierlog.raft.fetch import truncation_offset
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.messages import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
)
from tierlog.raft.requests import RequestManager
from tierlog.raft.retention import LogStartRetention
from tierlog.raft.snapshot_fetch import ChunkResult, SnapshotFetcher
from tierlog.raft.state import Follower, QuorumState
from tierlog.raft.types import Err, OffsetAndEpoch, RaftConfig
from tierlog.raft.voter_log import VoterLog

__all__ = ["FollowerFetch"]


class FollowerFetch:
    def __init__(self, node_id: int, config: RaftConfig, log: ReplicatedLog, quorum: QuorumState,
                 requests: RequestManager, snapshot_fetcher: SnapshotFetcher, retention: LogStartRetention,
                 commits: CommitDelivery, metrics: dict[str, float], request_flush: Callable[[], None],
                 voter_log: VoterLog):
        self._node_id = node_id
        self._config = config
        self._log = log
        self._quorum = quorum
        self._requests = requests
        self._snapshot_fetcher = snapshot_fetcher
        self._retention = retention
        self._commits = commits
        self._metrics = metrics
        self._request_flush = request_flush
        self._voter_log = voter_log   # every append, truncation and restart goes through it too

    def fetch_request(self, epoch: int) -> FetchRequest | FetchSnapshotRequest:
        c = self._config
        if self._snapshot_fetcher.active:
            return self._snapshot_fetcher.request(c.cluster_id, self._node_id, epoch)
        return FetchRequest(c.cluster_id, self._node_id, epoch, self._log.end_offset, self._log.last_fetched_epoch(),
                            self._log.start_offset, c.fetch_max_wait_ms, c.fetch_max_bytes,
                            self._commits.high_watermark, self._quorum.directory_id)

    def _following(self, sender_id: int, request_epoch: int) -> bool:
        s = self._quorum.state
        return isinstance(s, Follower) and s.leader_id == sender_id and s.epoch == request_epoch

    def on_fetch_response(self, sender_id: int, req: FetchRequest, resp: FetchResponse, now_ms: int) -> None:
        if not self._following(sender_id, req.current_leader_epoch) or resp.error != Err.NONE:
            self._requests.backoff(sender_id, now_ms)
            return
        self._quorum.leader_heard(now_ms)
        self._requests.ready(sender_id, now_ms)
        if resp.diverging_epoch is not None:
            self._truncate(resp.diverging_epoch)
        elif resp.snapshot_id is not None:
            if not self._snapshot_fetcher.start(resp.snapshot_id):
                self.install_snapshot(resp.snapshot_id)  # we have it already: restart the log there
        else:
            self._append(sender_id, resp, now_ms)

    def _truncate(self, diverging: OffsetAndEpoch) -> None:
        offset = truncation_offset(self._log, diverging)
        hw = self._commits.high_watermark
        assert offset >= hw, f"node {self._node_id}: truncation to {offset} below high watermark {hw}"
        self._log.truncate_to(offset)
        self._voter_log.truncated(offset)
        self._metrics["diverging-truncations"] += 1

    def _append(self, sender_id: int, resp: FetchResponse, now_ms: int) -> None:
        log = self._log
        batches = [b for b in resp.batches if b.base_offset >= log.end_offset]
        if batches and batches[0].base_offset == log.end_offset:
            log.append_as_follower(batches)
            self._voter_log.appended(batches)
            self._request_flush()  # durable before the next Fetch reports it to the leader
        elif resp.batches:  # nothing usable (a stale or misaligned answer): do not spin
            self._requests.backoff(sender_id, now_ms)
        self._retention.leader_lbo_seen(resp.log_start_offset)
        self._commits.raise_to(min(resp.high_watermark, log.end_offset))
        self._retention.advance_as_follower(self._commits.high_watermark, self._commits.applied_offset)

    def on_fetch_snapshot_response(self, sender_id: int, req: FetchSnapshotRequest, resp: FetchSnapshotResponse,
                                   now_ms: int) -> None:
        if not self._following(sender_id, req.current_leader_epoch) or not self._snapshot_fetcher.matches(req):
            return
        self._quorum.leader_heard(now_ms)
        self._requests.ready(sender_id, now_ms)
        result = self._snapshot_fetcher.on_response(resp)
        if result is ChunkResult.FAILED:
            self._requests.backoff(sender_id, now_ms)
        elif result is ChunkResult.COMPLETE:
            self.install_snapshot(req.snapshot_id)

    def install_snapshot(self, sid: OffsetAndEpoch) -> None:
        """A complete snapshot from the leader: restart the log at it and load it."""
        assert isinstance(self._quorum.state, Follower)
        self._retention.restart_at(sid)
        self._voter_log.restarted(sid)
        self._commits.snapshot_installed(sid)
