"""The read-only views of :class:`~tierlog.storage.log.Log` that other parts take: offsets by
timestamp (ListOffsets), the segments' summary, KIP-1303's local-log figures (the follower fetcher
sends them in Fetch v19) and the rolled segments an upload sees (KIP-405), under the log's lock.

A mixin over the log's own state, like ``log_epochs``; ``Log`` is the one class that uses it.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from tierlog.records.header import NO_TIMESTAMP
from tierlog.storage.log_read import (
    SegmentInfo,
    first_timestamp,
    max_timestamp_offset,
    offset_for_timestamp,
    segment_infos,
)
from tierlog.storage.results import RolledSegment

if TYPE_CHECKING:
    from tierlog.storage.io_guard import IoGuard
    from tierlog.storage.segment import LogSegment

__all__ = ["LogLookups"]


class LogLookups:
    # The state of ``Log`` this mixin works on, declared for the type checker.
    _lock: threading.RLock
    _segments: list[LogSegment]
    _truncations: int
    _first_timestamp: tuple[tuple, int] | None
    log_start_offset: int

    if TYPE_CHECKING:
        @property
        def log_end_offset(self) -> int: ...
        @property
        def local_log_start_offset(self) -> int: ...
        @property
        def size_in_bytes(self) -> int: ...
        @property
        def latest_epoch(self) -> int | None: ...
        def _io(self) -> IoGuard: ...
        def _segment_index(self, offset: int) -> int: ...

    # --- KIP-1303 local log state (read by the follower fetcher for Fetch v19) ------------------

    @property
    def local_log_start_timestamp(self) -> int:
        """KIP-1303 LocalLogStartTimestamp; -1 when the local log holds no record
        (``log_read.first_timestamp`` says how it is read)."""
        with self._lock:
            return self._local_log_start_timestamp()

    def _local_log_start_timestamp(self) -> int:
        start = self.local_log_start_offset
        if start >= self.log_end_offset:
            return NO_TIMESTAMP
        first = self._segment_index(start)
        # the batch holding ``start`` changes only when the start moves, a truncation
        # rewrites the tail or its segment is replaced: read its header once per change,
        # not on every fetch of every partition
        key = (start, self._truncations, id(self._segments[first]))
        cached = self._first_timestamp
        if cached is None or cached[0] != key:
            with self._io():
                cached = self._first_timestamp = (key, first_timestamp(self._segments, first, start))
        return cached[1]

    def fetch_position(self) -> tuple[int, int | None, int, int, int]:
        """A follower's next Fetch entry of this log, read at once (``replication.FollowerLog``): log
        end offset, latest epoch, log start offset, KIP-1303 LocalLogStartTimestamp and LocalLogSizeBytes."""
        with self._lock:
            segments = self._segments
            size = segments[0].size if len(segments) == 1 else sum(segment.size for segment in segments)
            return (segments[-1].next_offset, self.latest_epoch, self.log_start_offset,
                    self._local_log_start_timestamp(), size)

    @property
    def local_log_size_bytes(self) -> int:
        """KIP-1303 LocalLogSizeBytes: "the sum of local log segment sizes" ("Broker Side
        Changes"), i.e. ``size_in_bytes``; remote-only data is not counted."""
        with self._lock:
            return self.size_in_bytes


    # --- offset lookups ------------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the first record with timestamp >= ``timestamp``.

        Record-level like Kafka: the time index narrows the search to one batch, whose
        records are decoded (falls back to the batch's base offset if it cannot be).
        """
        with self._lock, self._io():
            start = max(self.log_start_offset, self.local_log_start_offset)
            return offset_for_timestamp(self._segments, timestamp, start)

    def max_timestamp_offset(self) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the record with the largest timestamp."""
        with self._lock, self._io():
            return max_timestamp_offset(self._segments)

    def segment_infos(self) -> list[SegmentInfo]:
        with self._lock, self._io():
            return segment_infos(self._segments)


    def rolled_segments(self) -> list[RolledSegment]:
        """Every segment but the active one, oldest first, as an upload sees it."""
        with self._lock, self._io():
            return [RolledSegment(seg.base_offset, nxt.base_offset, seg.size, seg.largest_timestamp_or_mtime(),
                                  seg.log_path, seg.offset_index.path, seg.time_index.path)
                    for seg, nxt in zip(self._segments, self._segments[1:], strict=False)]
