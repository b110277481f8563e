"""Commit delivery: the high watermark and what the state machine has been handed.

Rules:

- The high watermark never goes down; it only moves through ``raise_to`` (leader:
  a majority holds the offset; follower: min(leader's high watermark, own log end))
  or ``snapshot_installed``.
- Every committed batch is handed out exactly once, in offset order, up to the high
  watermark (``applied_offset`` is the next offset to hand out): ``take()`` returns
  what is ready for the next Output (``Output.committed``, raft/committed.py) and
  the shell applies it. Nothing here calls the state machine (etcd's
  ``Ready.CommittedEntries``, a pull). One Output carries batches of about
  ``COMMITTED_BYTES_PER_OUTPUT`` at most; ``take`` says when more is due at once.
- What was handed out but not yet applied is bounded: the shell acknowledges what it
  applied (``acknowledge``) and nothing more is handed out while the unapplied part
  holds ``UNAPPLIED_BYTES_MAX`` or more (etcd's Ready/Advance: no new committed
  entries before the application took the last ones), so a slow state machine
  (a broker creating thousands of partition logs) never makes the shell's queue
  grow with the whole log it is catching up on.
- When the log no longer holds what is needed (the LBO passed it), the latest
  snapshot is handed out first, to be loaded. A leader never loads a snapshot.
- A new (leader, epoch) is handed out once; a leader announces itself only after
  every batch before the start of its epoch was handed out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from tierlog.raft.committed import Committed, CommittedBatch
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.snapshots import SnapshotReader, SnapshotStore
from tierlog.raft.types import LeaderAndEpoch, LogBatch, OffsetAndEpoch

__all__ = ["COMMITTED_BYTES_PER_OUTPUT", "UNAPPLIED_BYTES_MAX", "CommitDelivery"]

READ_BYTES = 8 << 20
COMMITTED_BYTES_PER_OUTPUT = 8 << 20   # etcd's MaxCommittedSizePerReady: record bytes in one Output
UNAPPLIED_BYTES_MAX = 4 * COMMITTED_BYTES_PER_OUTPUT   # handed out and not yet acknowledged as applied


class CommitDelivery:
    def __init__(self, log: ReplicatedLog, snapshots: SnapshotStore, metrics: dict[str, float],
                 is_leader: Callable[[], bool], clock: Callable[[], float] | None = None,
                 max_bytes_per_output: int = COMMITTED_BYTES_PER_OUTPUT,
                 max_unapplied_bytes: int = UNAPPLIED_BYTES_MAX):
        self._log = log
        self._snapshots = snapshots
        self._metrics = metrics
        self._is_leader = is_leader
        self._clock = clock  # seconds; latency metrics only
        self._max_bytes = max_bytes_per_output
        self._max_unapplied = max_unapplied_bytes
        self._unapplied: deque[tuple[int, int]] = deque()    # (next offset, bytes) handed out, not applied
        self._unapplied_bytes = 0
        self._notified: LeaderAndEpoch | None = None
        self._ready: list[Committed] = []
        self._ready_bytes = 0
        self.high_watermark = log.start_offset
        self.applied_offset = 0  # offsets below it were handed out (snapshot or batches)

    def start(self) -> None:
        """At start-up: hand out the latest snapshot, if any."""
        latest = self._snapshots.latest()
        if latest is not None:
            self.load_snapshot(latest)
        self.high_watermark = max(self.high_watermark, self.applied_offset)

    def take(self) -> tuple[list[Committed], bool]:
        """What to apply, in order, since the last take (about one Output's worth at most),
        and whether committed batches remain for the next Output (the byte budget cut it)."""
        self.deliver()
        behind = (self._ready_bytes >= self._max_bytes and self.applied_offset < self.high_watermark
                  and not self.waiting_for_apply)
        ready, self._ready, self._ready_bytes = self._ready, [], 0
        return ready, behind

    @property
    def waiting_for_apply(self) -> bool:
        """Whether handing out waits for the shell to acknowledge what it applied."""
        return self._unapplied_bytes >= self._max_unapplied

    def acknowledge(self, applied_offset: int) -> None:
        """The shell applied everything below ``applied_offset``: as much more may be handed out."""
        while self._unapplied and self._unapplied[0][0] <= applied_offset:
            self._unapplied_bytes -= self._unapplied.popleft()[1]

    def _handed_out(self, next_offset: int, size: int) -> None:
        self._unapplied.append((next_offset, size))
        self._unapplied_bytes += size

    def raise_to(self, high_watermark: int) -> bool:
        """Move the high watermark up (never down) and hand out; True if it moved."""
        if high_watermark <= self.high_watermark:
            return False
        self.high_watermark = high_watermark
        self.deliver()
        return True

    def snapshot_installed(self, sid: OffsetAndEpoch) -> None:
        """The log restarted at snapshot ``sid``: load it unless already applied past it."""
        if sid.offset > self.applied_offset:
            self.load_snapshot(sid)
        self.high_watermark = max(self.high_watermark, sid.offset)

    def load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Hand out snapshot ``snapshot_id`` (read and decoded now: LoadSnapshotLatencyMs)."""
        assert not self._is_leader(), "a leader never loads a snapshot"
        data = self._snapshots.read_all(snapshot_id)
        assert data is not None
        started = self._clock() if self._clock else 0.0
        reader = SnapshotReader(snapshot_id, data)
        if self._clock:
            self._metrics["LoadSnapshotLatencyMs"] = (self._clock() - started) * 1000.0
        self._metrics["snapshots-loaded"] += 1
        self._metrics["SnapshotSizeBytes"] = reader.size_bytes
        self._ready.append(reader)
        self.applied_offset = snapshot_id.offset
        self._handed_out(snapshot_id.offset, reader.size_bytes)

    def notify_leader_change(self, leader: LeaderAndEpoch, epoch_start_offset: int | None) -> None:
        """``epoch_start_offset`` is set when this node leads: wait until handed out past it."""
        if epoch_start_offset is not None and self.applied_offset <= epoch_start_offset:
            return
        if leader != self._notified:
            self._notified = leader
            self._ready.append(leader)

    def deliver(self) -> None:
        """Hand out committed batches up to the high watermark, within this Output's budget."""
        if self.applied_offset < self._log.start_offset:
            latest = self._snapshots.latest()
            assert latest is not None and latest.offset >= self._log.start_offset
            self.load_snapshot(latest)
        while (self.applied_offset < self.high_watermark and self._ready_bytes < self._max_bytes
               and not self.waiting_for_apply):
            batches = self._log.read(self.applied_offset, READ_BYTES, end=self.high_watermark)
            if not batches:
                break
            for b in batches:
                assert b.base_offset == self.applied_offset, (b.base_offset, self.applied_offset)
                self.applied_offset = b.next_offset
                committed = _committed(b)
                self._ready.append(committed)
                self._ready_bytes += committed.size_estimate
                self._handed_out(b.next_offset, committed.size_estimate)
                if self._ready_bytes >= self._max_bytes or self.waiting_for_apply:
                    break


def _committed(b: LogBatch) -> CommittedBatch:
    if b.control:
        return CommittedBatch(b.base_offset, b.last_offset, b.epoch, b.append_timestamp, [], True, list(b.records))
    return CommittedBatch(b.base_offset, b.last_offset, b.epoch, b.append_timestamp, list(b.records))
