"""The log begin offset (LBO) and snapshot retention (KIP-630).

Rules:

- Start-up ('Validation of Snapshot and Log'): the log must begin at 0 or at a
  snapshot and agree with the latest snapshot. A snapshot newer than the log (or not
  on one of its batch boundaries with the same epoch) restarts the log at it; a log
  whose begin offset no snapshot covers is reset to empty (the replica bootstraps
  from the leader); a log beginning inside the first snapshot it holds advances to it.
- Leader ('When to Increase the Log Begin Offset'): the LBO moves to the largest
  committed snapshot every live replica already holds, or to the largest committed
  one once the current LBO is ``max_replication_lag_ms`` old (LeaderProgress
  chooses; this unit applies it, never past the high watermark or what the state
  machine has applied).
- Follower: the LBO follows the leader's (seen in Fetch answers) up to its own
  latest snapshot not above it, the high watermark and what it has applied.
- A snapshot installed from the leader restarts the log at it.
- 'When to Delete Snapshots': whenever the LBO moves, every snapshot ending
  before it is deleted.
"""

from __future__ import annotations

from tierlog.raft.leader import LeaderProgress
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.snapshots import SnapshotStore
from tierlog.raft.types import OffsetAndEpoch

__all__ = ["LogStartRetention", "delete_snapshots_below"]


def delete_snapshots_below(snapshots: SnapshotStore, lbo: int) -> None:
    """KIP-630 'When to Delete Snapshots': any snapshot ending before the LBO goes."""
    for sid in snapshots.list():
        if sid.offset < lbo:
            snapshots.delete(sid)


class LogStartRetention:
    def __init__(self, log: ReplicatedLog, snapshots: SnapshotStore, metrics: dict[str, float], now_ms: int):
        self._log = log
        self._snapshots = snapshots
        self._metrics = metrics
        self._since_ms = now_ms  # when the LBO last moved (or this node became leader)
        self._leader_lbo = 0     # the leader's LBO as last seen by a follower

    def validate_at_startup(self) -> None:
        """KIP-630 'Validation of Snapshot and Log', before anything else runs."""
        log, ids = self._log, self._snapshots.list()
        latest = ids[-1] if ids else None
        if latest is not None and latest.offset >= log.start_offset and (
                latest.offset > log.end_offset or not log.is_batch_boundary(latest.offset)
                or log.epoch_of(latest.offset - 1) != latest.epoch):
            # the snapshot disagrees with the log, and it is committed state: the log restarts at it
            log.truncate_fully_and_start_at(latest.offset, latest.epoch)
        start = log.start_offset
        if start > 0 and not any(start <= s.offset <= log.end_offset for s in ids):
            self._metrics["invalid-log-resets"] += 1
            log.truncate_fully_and_start_at(0, 0)
            for s in ids:
                self._snapshots.delete(s)
            return
        if start > 0:
            first = min(s for s in ids if start <= s.offset <= log.end_offset)
            if first.offset != start:
                log.delete_before(first.offset, first.epoch)
        delete_snapshots_below(self._snapshots, log.start_offset)

    def leader_elected(self, now_ms: int) -> None:
        """A new leader gives its replicas a full max_replication_lag_ms before it moves the LBO."""
        self._since_ms = now_ms

    def advance_as_leader(self, progress: LeaderProgress, high_watermark: int, applied: int,
                          now_ms: int) -> int | None:
        """Move the LBO if the rules allow; else the time to check again (or None)."""
        ids = self._snapshots.list()
        target = progress.lbo_target(ids, self._log.start_offset, self._since_ms, now_ms)
        if target is not None and self._log.is_batch_boundary(target.offset):
            assert target.offset <= high_watermark and target.offset <= applied
            self._advance(target)
            self._since_ms = now_ms
            return None
        if any(self._log.start_offset < i.offset <= high_watermark for i in ids):
            return progress.lbo_deadline(self._since_ms)
        return None

    def leader_lbo_seen(self, lbo: int) -> None:
        self._leader_lbo = max(self._leader_lbo, lbo)

    def advance_as_follower(self, high_watermark: int, applied: int) -> None:
        """Follow the leader's LBO up to our own latest snapshot that is not above it."""
        log = self._log
        limit = min(self._leader_lbo, high_watermark, applied)
        ids = [s for s in self._snapshots.list() if log.start_offset < s.offset <= limit
               and log.is_batch_boundary(s.offset) and log.epoch_of(s.offset - 1) == s.epoch]
        if ids:
            self._advance(ids[-1])

    def restart_at(self, sid: OffsetAndEpoch) -> None:
        """A complete snapshot from the leader: the log restarts at it."""
        self._log.truncate_fully_and_start_at(sid.offset, sid.epoch)
        delete_snapshots_below(self._snapshots, sid.offset)

    def _advance(self, target: OffsetAndEpoch) -> None:
        self._log.delete_before(target.offset, target.epoch)
        self._metrics["log-start-advances"] += 1
        delete_snapshots_below(self._snapshots, target.offset)
