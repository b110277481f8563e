"""Commit delivery: the high watermark and what the listener (state machine) has seen.

Rules:

- The high watermark never goes down; it only moves through ``raise_to`` (leader:
  a majority holds the offset; follower: min(leader's high watermark, own log end))
  or ``snapshot_installed``.
- The listener gets every committed batch exactly once, in offset order, up to the
  high watermark (``applied_offset`` is the next offset it will see). When the log
  no longer holds what it needs (the LBO passed it), it loads the latest snapshot
  first. A leader never loads a snapshot.
- The listener hears of a new (leader, epoch) once; a leader announces itself only
  after the state machine has caught up past the start of its epoch.
"""

from __future__ import annotations

from collections.abc import Callable

from tierlog.raft.listener import CommittedBatch, RaftListener
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.snapshots import SnapshotReader, SnapshotStore
from tierlog.raft.types import LeaderAndEpoch, LogBatch, OffsetAndEpoch

__all__ = ["CommitDelivery"]

READ_BYTES = 8 << 20


class CommitDelivery:
    def __init__(self, log: ReplicatedLog, snapshots: SnapshotStore, listener: RaftListener,
                 metrics: dict[str, float], is_leader: Callable[[], bool],
                 clock: Callable[[], float] | None = None):
        self._log = log
        self._snapshots = snapshots
        self._listener = listener
        self._metrics = metrics
        self._is_leader = is_leader
        self._clock = clock  # seconds; latency metrics only
        self._notified: LeaderAndEpoch | None = None
        self.high_watermark = log.start_offset
        self.applied_offset = 0  # offsets below it were given to the listener

    def start(self) -> None:
        """At start-up: load the latest snapshot, if any."""
        latest = self._snapshots.latest()
        if latest is not None:
            self.load_snapshot(latest)
        self.high_watermark = max(self.high_watermark, self.applied_offset)

    def raise_to(self, high_watermark: int) -> bool:
        """Move the high watermark up (never down) and deliver; True if it moved."""
        if high_watermark <= self.high_watermark:
            return False
        self.high_watermark = high_watermark
        self._deliver()
        return True

    def snapshot_installed(self, sid: OffsetAndEpoch) -> None:
        """The log restarted at snapshot ``sid``: load it unless already applied past it."""
        if sid.offset > self.applied_offset:
            self.load_snapshot(sid)
        self.high_watermark = max(self.high_watermark, sid.offset)

    def load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        assert not self._is_leader(), "a leader never loads a snapshot"
        data = self._snapshots.read_all(snapshot_id)
        assert data is not None
        reader = SnapshotReader(snapshot_id, data)
        started = self._clock() if self._clock else 0.0
        self._listener.handle_load_snapshot(reader)
        if self._clock:
            self._metrics["LoadSnapshotLatencyMs"] = (self._clock() - started) * 1000.0
        self._metrics["snapshots-loaded"] += 1
        self._metrics["SnapshotSizeBytes"] = reader.size_bytes
        self.applied_offset = snapshot_id.offset

    def notify_leader_change(self, leader: LeaderAndEpoch, epoch_start_offset: int | None) -> None:
        """``epoch_start_offset`` is set when this node leads: wait until applied past it."""
        if epoch_start_offset is not None and self.applied_offset <= epoch_start_offset:
            return
        if leader != self._notified:
            self._notified = leader
            self._listener.handle_leader_change(leader)

    def _deliver(self) -> None:
        if self.applied_offset < self._log.start_offset:
            latest = self._snapshots.latest()
            assert latest is not None and latest.offset >= self._log.start_offset
            self.load_snapshot(latest)
        while self.applied_offset < self.high_watermark:
            batches = self._log.read(self.applied_offset, READ_BYTES, end=self.high_watermark)
            if not batches:
                break
            for b in batches:
                assert b.base_offset == self.applied_offset, (b.base_offset, self.applied_offset)
                self.applied_offset = b.next_offset
                self._listener.handle_commit(_committed(b))


def _committed(b: LogBatch) -> CommittedBatch:
    if b.control:
        return CommittedBatch(b.base_offset, b.last_offset, b.epoch, b.append_timestamp, [], True, list(b.records))
    return CommittedBatch(b.base_offset, b.last_offset, b.epoch, b.append_timestamp, list(b.records))
