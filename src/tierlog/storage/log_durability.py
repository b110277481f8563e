"""The durability part of ``Log``: flushes and the time-driven flush policy.

A flush syncs segments below a target offset and then moves the recovery point
(``log_flush``: the log's lock is never held across an fsync). What makes one
due: a rolled segment (its end), ``flush.ms`` passed (the log end), or
``flush.messages`` unflushed messages (synchronous, so the append's answer
waits, as in Kafka). With a writer (``Log.open(writer=...)``) time-driven
flushes run on the writer's thread, one at a time per log.

A mixin of ``storage.log.Log``: it works on the log's segments, lock and
recovery point, which ``Log`` owns.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from tierlog.storage.errors import KafkaStorageError
from tierlog.storage.io_guard import IoGuard
from tierlog.storage.log_config import LONG_MAX
from tierlog.storage.log_flush import sync_flush, take_flush
from tierlog.storage.segment import LogSegment

if TYPE_CHECKING:
    from tierlog.storage.dir_writer import Writer
    from tierlog.storage.epoch_cache import LeaderEpochCache
    from tierlog.storage.log_config import LogConfig
    from tierlog.storage.timed_work import TimedWork

__all__ = ["LogDurability"]

_log = logging.getLogger("tierlog.storage.log")


class LogDurability:
    # The state of ``Log`` this mixin works on (``Log.__init__`` sets it), declared for the type checker.
    directory: Path
    config: LogConfig
    recovery_point: int
    _lock: threading.RLock
    _flush_lock: threading.Lock
    _segments: list[LogSegment]
    _epochs: LeaderEpochCache
    _truncations: int
    _clock_ms: int
    _dir_dirty: bool
    _guard: IoGuard
    _closed: bool
    _flush_queued: bool
    _pending_deletes: list[tuple[int, LogSegment]]
    _roll_flush_offset: int | None
    _timed: TimedWork
    _writer: Writer | None

    if TYPE_CHECKING:
        @property
        def log_end_offset(self) -> int: ...
        def _io(self) -> IoGuard: ...
        def _segment_index(self, offset: int) -> int: ...

    def flush(self, now_ms: int, offset: int | None = None) -> None:
        """fsync segments holding data below ``offset`` (default: all), then advance the
        recovery point. The log's lock is not held during the fsyncs (``log_flush``);
        never call this holding it (flushes take the flush lock first)."""
        with self._flush_lock:
            with self._lock, self._io():
                self._clock_ms = max(self._clock_ms, now_ms)
                target = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
                directory, self._dir_dirty = (self.directory if self._dir_dirty else None), False
                plan = take_flush(self._segments[self._segment_index(self.recovery_point):], target,
                                  self._truncations, directory, self._epochs)
            with self._io():
                sync_flush(plan, self._segment_live, self._dir_live)
            with self._lock:
                if self._truncations == plan.truncations:
                    self.recovery_point = max(self.recovery_point, plan.target)
                self._last_flush_ms = now_ms

    def _segment_live(self, segment: LogSegment) -> bool:
        with self._lock:
            return not self._closed and segment.fd >= 0 and any(s is segment for s in self._segments)

    def _dir_live(self, directory: Path) -> bool:
        with self._lock:
            return not self._closed and directory == self.directory

    def defer_epoch_checkpoint(self) -> None:
        """Write leader-epoch-checkpoint changes at ``flush`` instead of as they happen
        (for a log whose flushes run off the event loop and whose recovery rescans
        every segment, like the Raft metadata log)."""
        with self._lock:
            self._epochs.write_through = False

    def _flush_due(self) -> bool:
        """flush.messages unflushed messages (asked under the log's lock, by an append): the append
        then flushes before it returns, so its answer waits for the fsync (as in Kafka)."""
        return self.log_end_offset - self.recovery_point >= self.config.flush_messages

    @property
    def offline(self) -> bool:
        """Closed, or taken offline by an I/O error (maybe in a background flush)."""
        return self._guard.offline

    @property
    def has_rolled_segments(self) -> bool:
        """Whether the log has a segment besides the active one (read without the lock, like ``tick_due``)."""
        return len(self._segments) > 1

    @property
    def has_timed_work(self) -> bool:
        """Whether ``tick`` may have work now or later without the log saying so again
        (``TimedWork.due``): files waiting for deletion, a rolled segment to flush, a finite
        ``flush.ms``. Read without the lock, like ``tick_due``."""
        return bool(self._pending_deletes) or self._roll_flush_offset is not None or self._flush_queued or (
            self.config.flush_ms < LONG_MAX)

    def _latest_ms(self) -> int:
        """The latest time seen by this log or its manager's ticks (an idle log is not ticked)."""
        return max(self._clock_ms, self._timed.now_ms)

    def tick_due(self, now_ms: int) -> bool:
        """Whether ``tick`` has work now: files to delete, a rolled segment or ``flush.ms`` to flush.

        Read without the lock (at worst the work waits one tick), so that a LogManager tick over
        thousands of idle logs costs a few attribute reads each; it also records ``now_ms`` for
        the calls that take no time.
        """
        self._clock_ms = max(self._clock_ms, now_ms)
        return bool(self._pending_deletes) or self._roll_flush_offset is not None or (
            self.log_end_offset > self.recovery_point and now_ms - self._last_flush_ms >= self.config.flush_ms)

    def tick(self, now_ms: int) -> None:
        """Time-driven work: flush after a roll, flush.ms, delayed file deletion.

        With a writer (``Log.open(writer=...)``) the flush runs on the writer's thread
        (one at a time per log) and the recovery point moves when it is done; without
        one it runs here.
        """
        with self._lock:
            if self._guard.offline:
                return
            self._clock_ms = max(self._clock_ms, now_ms)
            self._delete_expired(now_ms)
            if self._flush_queued:
                return
            target = self._due_flush_target(now_ms)
            if target is None:
                return
            self._roll_flush_offset = None
            if self._writer is not None:
                self._flush_queued = True
                self._writer.submit(self._flush_in_background, now_ms, target)
                return
        self.flush(now_ms, target)

    def _delete_expired(self, now_ms: int) -> None:
        """Remove the files of segments whose file.delete.delay.ms passed (``Log._remove_segments``)."""
        due = [segment for when, segment in self._pending_deletes if when <= now_ms]
        if due:
            self._pending_deletes = [(w, s) for w, s in self._pending_deletes if w > now_ms]
            with self._io():
                for segment in due:
                    segment.delete_files()

    def _due_flush_target(self, now_ms: int) -> int | None:
        """Where a flush is due to reach: a rolled segment's end, else the log end if flush.ms passed."""
        if self._roll_flush_offset is not None:
            return self._roll_flush_offset
        if self.log_end_offset > self.recovery_point and now_ms - self._last_flush_ms >= self.config.flush_ms:
            return self.log_end_offset
        return None

    def _flush_in_background(self, now_ms: int, target: int) -> None:
        """On the writer's thread. An I/O error leaves the log offline (``offline``) for the
        LogManager to act on; a log closed meanwhile needs no flush."""
        try:
            self.flush(now_ms, target)
        except KafkaStorageError as exc:
            if not self._closed:
                _log.error("background flush of %s failed: %s", self.directory, exc)
        finally:
            self._flush_queued = False
