"""Background CRC check of closed segments: a byte gone bad on disk is found.

A batch is checked when it is appended; a closed segment is not read again
until someone fetches or uploads it (fetches are served from file regions
unread, and librdkafka checks no CRC by default).  ``SegmentVerifier`` walks
the closed (rolled) segments of every log in turn and checks each batch's
sizes and CRC-32C, at most ``log.segment.verify.bytes.per.second`` (a tierlog
setting; 0 turns it off), resuming where the previous step stopped, and
starting over once every log was walked.  ``step`` runs on the caller's thread
(the LogManager's tick) and reports each bad batch found as a ``Corruption``:
the first offset it can no longer vouch for (the offset after the last good
batch of the segment, its base offset when the first batch is bad).  What to do
is the caller's: a follower truncates there and fetches again from its leader.
Each bad batch is reported once (a leader's stays until an operator acts).

The walk runs on the event loop in Python per batch (the CRC in C): at the
default 1 MiB/s a log of 100-byte batches costs about 10k header checks a
second, a few tens of ms; a broker holding 100 GB is walked about once a day.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from tierlog.records.errors import InvalidRecordError
from tierlog.records.header import HEADER_SIZE, LOG_OVERHEAD, batch_size_at
from tierlog.records.validate import validate_batch
from tierlog.storage.batch_scan import read_exact

__all__ = ["Corruption", "SegmentVerifier"]

_CHUNK = 1024 * 1024
_VISIT_COST = 64 * 1024     # bytes a step charges for moving to another segment
LOGS_LOOKED_AT_PER_STEP = 256   # logs a step looks through for closed segments, at most (idle logs have none)
TopicPartition = tuple[str, int]


class Corruption(NamedTuple):
    key: TopicPartition
    segment_base: int
    position: int               # of the bad batch in the segment file
    offset: int                 # the first offset not vouched for
    error: str


class _Cursor(NamedTuple):
    key: TopicPartition
    segment_base: int
    position: int               # a batch boundary
    next_offset: int            # the offset after the last good batch
    inode: int | None = None    # of the file walked so far (a cleaner's swap replaces it: start over)


class SegmentVerifier:
    def __init__(self, bytes_per_second: int) -> None:
        self.bytes_per_second = bytes_per_second
        self._cursor: _Cursor | None = None
        self._round: list[TopicPartition] = []          # the logs of this round, in order
        self._index = 0                                 # the next one to look at
        self._looked = 0                                # logs looked at in this step
        self._wrapped = False                           # a new round began: the step ends there
        self._reported: set[tuple[TopicPartition, int, int]] = set()   # (log, segment, position) told once

    def step(self, logs: dict[TopicPartition, object], elapsed_ms: int) -> list[Corruption]:
        """Check up to ``bytes_per_second * elapsed_ms`` bytes of closed segments."""
        budget = self.bytes_per_second * max(0, elapsed_ms) // 1000
        found: list[Corruption] = []
        self._wrapped, self._looked = False, 0
        while budget > 0 and logs and not self._wrapped and self._looked < LOGS_LOOKED_AT_PER_STEP:
            cursor = self._cursor or self._next_segment(logs, None)
            if cursor is None:
                return found
            used, self._cursor, bad = self._check(logs, cursor, budget)
            budget -= max(used, _VISIT_COST)        # empty or vanished segments cost something too
            if bad is not None and (bad.key, bad.segment_base, bad.position) not in self._reported:
                self._reported.add((bad.key, bad.segment_base, bad.position))
                found.append(bad)
        return found

    def _check(self, logs, cursor: _Cursor, budget: int) -> tuple[int, _Cursor | None, Corruption | None]:
        log = logs.get(cursor.key)
        segment = _segment(log, cursor.segment_base)
        if segment is None:
            return 0, self._next_segment(logs, cursor), None
        try:
            inode, position, next_offset, error = _verify(segment.log_path, cursor, segment.size, budget)
        except OSError:                 # deleted or truncated meanwhile: the next segment
            return 0, self._next_segment(logs, cursor), None
        if inode != cursor.inode and cursor.position:       # replaced since the last step: from the start
            return 0, _Cursor(cursor.key, cursor.segment_base, 0, cursor.segment_base, inode), None
        used = position - cursor.position
        if error is not None:
            bad = Corruption(cursor.key, cursor.segment_base, position, next_offset, error)
            return used, self._next_log(logs, cursor.key), bad
        if position >= segment.size or used == 0:      # done, or it changed under us: the next one
            return used, self._next_segment(logs, cursor), None
        return used, cursor._replace(position=position, next_offset=next_offset, inode=inode), None

    def _next_segment(self, logs, cursor: _Cursor | None) -> _Cursor | None:
        """The closed segment after ``cursor``'s in its log, else the first of the next log."""
        if cursor is not None:
            log = logs.get(cursor.key)
            later = [s for s in _rolled(log) if s.base_offset > cursor.segment_base]
            if later:
                return _Cursor(cursor.key, later[0].base_offset, 0, later[0].base_offset)
            return self._next_log(logs, cursor.key)
        return self._next_log(logs, None)

    def _next_log(self, logs, current: TopicPartition | None) -> _Cursor | None:
        """The first closed segment of the next log of the round that has one. A step looks at
        no more than LOGS_LOOKED_AT_PER_STEP logs, so thousands of idle logs (one segment
        each) cost a tick a bounded look, and a round ends the step that begins the next."""
        for _ in range(len(logs) + 1):
            if self._looked >= LOGS_LOOKED_AT_PER_STEP:
                return None
            if self._index >= len(self._round):
                if self._round:
                    self._wrapped = True
                self._round, self._index = sorted(logs), 0      # logs created meanwhile join here
                if self._wrapped:
                    return None
            key = self._round[self._index]
            self._index += 1
            self._looked += 1
            log = logs.get(key)
            if log is None or not log.has_rolled_segments:
                continue
            rolled = _rolled(log)
            if rolled:
                return _Cursor(key, rolled[0].base_offset, 0, rolled[0].base_offset)
        return None


def _rolled(log) -> list:
    if log is None or log.offline:
        return []
    try:
        return log.rolled_segments()
    except Exception:       # noqa: BLE001 - offline or closed meanwhile: nothing to check
        return []


def _segment(log, base: int):
    return next((s for s in _rolled(log) if s.base_offset == base), None)


def _verify(path, cursor: _Cursor, size: int, budget: int) -> tuple[int, int, int, str | None]:
    """Check batches from the cursor (at most about ``budget`` bytes): (inode, position reached,
    next offset, error); nothing is checked when the file is not the one the cursor walked."""
    fd = os.open(path, os.O_RDONLY)
    try:
        inode = os.fstat(fd).st_ino
        if cursor.position and inode != cursor.inode:
            return inode, cursor.position, cursor.next_offset, None
        return inode, *_walk(fd, cursor.position, size, cursor.next_offset, budget, read_exact)
    finally:
        os.close(fd)


def _walk(fd: int, pos: int, size: int, next_offset: int, budget: int,
          read: Callable[[int, int, int], bytes]) -> tuple[int, int, str | None]:
    end = min(size, pos + max(budget, HEADER_SIZE))
    while pos < end:
        head = read(fd, min(_CHUNK, size - pos), pos)
        if len(head) < HEADER_SIZE:
            return pos, next_offset, None       # changed under us (a swap, a truncation): not corruption
        view, offset = memoryview(head), 0
        while pos + offset < end and offset + HEADER_SIZE <= len(view):
            batch = batch_size_at(view, offset)
            if batch < HEADER_SIZE or pos + offset + batch > size:
                return pos + offset, next_offset, f"bad batch length {batch - LOG_OVERHEAD}"
            if offset + batch > len(view):
                if offset:
                    break
                view = memoryview(read(fd, batch, pos))          # one batch larger than the chunk
                if len(view) < batch:
                    return pos, next_offset, None       # changed under us (a swap, a truncation): not corruption
                continue
            try:
                header = validate_batch(view, offset)
            except InvalidRecordError as exc:
                return pos + offset, next_offset, exc.message
            next_offset = header.next_offset
            offset += header.size
        if offset == 0:
            return pos, next_offset, "no whole batch"
        pos += offset
    return pos, next_offset, None
