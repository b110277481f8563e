"""One log segment: ``<base>.log`` plus its ``.index`` and ``.timeindex``.

The ``.log`` file is plain append-only (no preallocation, so its size is its data
and nothing needs trimming on roll or after a crash). The segment keeps one
read/write descriptor open for its life; fetches hand that descriptor out inside
``FileRegion``s, which share it (``SharedFd``): closing the segment closes the descriptor
only once no region of it is left, so a region read late never meets a reused number.
Appends are ``os.pwrite`` at the tracked size; a failed write is cut back off with
``ftruncate`` so the file never keeps a torn batch.

Index entries follow Kafka's ``LogSegment.append``: before appending a batch, if
more than index.interval.bytes were written since the last entry, the batch gets
an offset index entry (its last offset -> its start position) and the time index
gets the largest timestamp so far. On roll and close the time index also gets the
segment's final largest timestamp.

Segments opened without recovery (flushed before a crash, or after a clean
shutdown) are trusted: their indexes, next offset and largest timestamp load
lazily; an index failing its sanity checks is rebuilt by ``recover``.

Tail reads without reading the file: the positions and headers of the last
``TAIL_BATCHES_MAX`` batches appended are kept, so ``locate`` finds a batch among
them (what followers and caught-up consumers read) without scanning headers from
the index entry below it; a truncation or recovery forgets them.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tierlog.records.header import NO_TIMESTAMP, BatchHeader
from tierlog.storage import writeback
from tierlog.storage.batch_scan import (
    ScanStop,
    read_exact,
    scan_headers,
    scan_valid_batches,
)
from tierlog.storage.epoch_cache import LeaderEpochCache
from tierlog.storage.errors import CorruptIndexError
from tierlog.storage.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    segment_file,
    slow_disk,
)
from tierlog.storage.index import OffsetIndex, TimeIndex
from tierlog.storage.shared_fd import SharedFd

__all__ = ["INT32_MAX", "LogSegment"]

INT32_MAX = 2**31 - 1
_UNKNOWN = None
_CLOSED = SharedFd(-1)      # a closed segment's: a region of it reads nothing (EBADF)
TAIL_BATCHES_MAX = 4        # the last batches appended, located without reading the file


class LogSegment:
    """Segment state; not thread-safe (``Log`` serialises access)."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        fd: int,
        size: int,
        index_interval_bytes: int,
        max_index_size: int,
        created_ms: int,
        new: bool,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.fd = fd
        self.file = SharedFd(fd)    # what FileRegions hold: closed once they and this segment let go
        self.size = size
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self.offset_index = OffsetIndex(segment_file(directory, base_offset, INDEX_SUFFIX), base_offset,
                                        max_index_size, loaded=new)
        self.time_index = TimeIndex(segment_file(directory, base_offset, TIME_INDEX_SUFFIX), base_offset,
                                    max_index_size, loaded=new)
        self.bytes_since_index = 0
        self.dirty = False  # bytes written since the last fsync
        self._writeback_from = size - size % writeback.PAGE   # early writeback started below this
        self.suffix = ""
        self._next_offset: int | None = base_offset if new else _UNKNOWN
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = base_offset
        self._rolling_timestamp: int | None = NO_TIMESTAMP if new else _UNKNOWN
        self._tail: list[tuple[int, BatchHeader]] = []     # (position, header) of the last batches appended
        self._tail_floor = -1                               # the last offset before the first of them

    # --- construction ------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval_bytes: int, max_index_size: int,
               now_ms: int) -> LogSegment:
        """A new empty segment (any leftover files at that base offset are emptied)."""
        fd = os.open(segment_file(directory, base_offset, LOG_SUFFIX), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            os.close(os.open(segment_file(directory, base_offset, suffix), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                             0o644))
        return cls(directory, base_offset, fd, 0, index_interval_bytes, max_index_size, now_ms, new=True)

    @classmethod
    def create_cleaned(cls, directory: Path, base_offset: int, index_interval_bytes: int, max_index_size: int,
                       now_ms: int) -> LogSegment:
        """A new empty segment whose three files carry the ``.cleaned`` suffix (the log
        cleaner's output; ``change_suffix`` swaps it in)."""
        paths = [segment_file(directory, base_offset, suffix + CLEANED_SUFFIX)
                 for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)]
        fd = os.open(paths[0], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for path in paths[1:]:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        except OSError:
            os.close(fd)
            raise
        segment = cls(directory, base_offset, fd, 0, index_interval_bytes, max_index_size, now_ms, new=True)
        segment.suffix = CLEANED_SUFFIX
        segment.offset_index.rename(paths[1])
        segment.time_index.rename(paths[2])
        return segment

    def change_suffix(self, suffix: str) -> None:
        """Rename the three files from the current suffix to ``suffix`` (Kafka's
        changeFileSuffixes): the indexes first, the ``.log`` last, so the log file's
        name tells recovery how far a swap got. The descriptor stays valid."""
        for index in (self.offset_index, self.time_index):
            target = Path(str(index.path)[: len(str(index.path)) - len(self.suffix)] + suffix)
            with contextlib.suppress(FileNotFoundError):
                os.replace(index.path, target)
            index.rename(target)
        os.replace(self.log_path, segment_file(self.directory, self.base_offset, LOG_SUFFIX + suffix))
        self.suffix = suffix

    @classmethod
    def open(cls, directory: Path, base_offset: int, index_interval_bytes: int, max_index_size: int,
             now_ms: int) -> LogSegment:
        """An existing segment; call ``recover`` or rely on lazy loading."""
        fd = os.open(segment_file(directory, base_offset, LOG_SUFFIX), os.O_RDWR)
        size = os.fstat(fd).st_size
        return cls(directory, base_offset, fd, size, index_interval_bytes, max_index_size, now_ms, new=False)

    # --- lazily known facts ---------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        return segment_file(self.directory, self.base_offset, LOG_SUFFIX + self.suffix)

    @property
    def next_offset(self) -> int:
        """Offset after the last batch (exclusive); the base offset when empty."""
        if self._next_offset is _UNKNOWN:
            self._load()
        assert self._next_offset is not None, "_load sets it"
        return self._next_offset

    @property
    def max_timestamp(self) -> int:
        if self._next_offset is _UNKNOWN:
            self._load()
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        """Last offset of the batch that holds ``max_timestamp`` (Kafka's shallow offset)."""
        if self._next_offset is _UNKNOWN:
            self._load()
        return self._offset_of_max_timestamp

    @property
    def rolling_timestamp(self) -> int:
        """maxTimestamp of the first batch (segment.ms is measured from it), -1 if none."""
        if self._rolling_timestamp is _UNKNOWN:
            first = next(scan_headers(self.fd, 0, self.size), None)
            self._rolling_timestamp = first[1].max_timestamp if first else NO_TIMESTAMP
        return self._rolling_timestamp

    def find_by_timestamp_floor(self, timestamp: int, start_offset: int) -> int:
        """Position to scan from for the first record with timestamp >= ``timestamp``."""
        self.ensure_loaded()
        _, indexed_offset = self.time_index.lookup(timestamp)
        return self.offset_index.lookup(max(indexed_offset, start_offset))[1]

    def position_floor(self, offset: int) -> int:
        """Position of the indexed batch at or before the one holding ``offset``."""
        self.ensure_loaded()
        return self.offset_index.lookup(offset)[1]

    def largest_timestamp_or_mtime(self) -> int:
        """What retention.ms compares: the largest timestamp, else the file's mtime (ms)."""
        if self.max_timestamp > 0:
            return self.max_timestamp
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    def ensure_loaded(self) -> None:
        """Load (or rebuild) the indexes and derived facts of a trusted segment."""
        if self._next_offset is _UNKNOWN:
            self._load()

    @property
    def indexes_full(self) -> bool:
        self.ensure_loaded()
        return self.offset_index.is_full or self.time_index.is_full

    def _load(self) -> None:
        try:
            self.offset_index.ensure_loaded()
            self.time_index.ensure_loaded()
            self.offset_index.check_positions(self.size)
        except CorruptIndexError:
            self.recover(None)
            return
        self._max_timestamp, self._offset_of_max_timestamp = self.time_index.last_entry()
        next_offset = self.base_offset
        for _pos, header in scan_headers(self.fd, self.offset_index.last_position, self.size):
            next_offset = header.next_offset
            if header.max_timestamp > self._max_timestamp:
                self._max_timestamp, self._offset_of_max_timestamp = header.max_timestamp, header.last_offset
        self._next_offset = next_offset

    # --- writes ----------------------------------------------------------------------------------

    def append(self, data, headers: list[BatchHeader]) -> None:
        """Write contiguous batches ``data`` (described by ``headers``) at the end."""
        self.ensure_loaded()
        start = self.size
        slow_disk()         # test only (storage.files): a no-op unless the nemesis slowed this disk
        _write_at(self.fd, data, start)
        if start == 0:
            self._rolling_timestamp = headers[0].max_timestamp
        position = start
        last = self.next_offset - 1
        tail = self._tail
        if not tail:
            self._tail_floor = last
        for header in headers:
            last = header.base_offset + header.last_offset_delta
            self._index_batch(header, last, position)
            tail.append((position, header))
            position += header.batch_length + 12
        if len(tail) > TAIL_BATCHES_MAX:
            dropped = tail[-TAIL_BATCHES_MAX - 1][1]
            self._tail_floor = dropped.base_offset + dropped.last_offset_delta
            del tail[:-TAIL_BATCHES_MAX]
        self.size = position
        self._next_offset = last + 1
        self.dirty = True
        self._start_writeback()

    def _start_writeback(self) -> None:
        if self.size - self._writeback_from < writeback.STEP_BYTES:
            return                  # not due (most appends): writeback_end would say None
        end = writeback.writeback_end(self._writeback_from, self.size)
        if end is not None:
            writeback.schedule(self.fd, self._writeback_from, end - self._writeback_from)
            self._writeback_from = end

    def _index_batch(self, header: BatchHeader, last_offset: int, position: int) -> None:
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = last_offset
        if self.bytes_since_index > self.index_interval_bytes and not self._indexes_at_capacity():
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self.bytes_since_index = 0
        self.bytes_since_index += header.batch_length + 12

    def _indexes_at_capacity(self) -> bool:
        """Full indexes stay sparser until the next roll rather than overflow."""
        return self.offset_index.is_full or self.time_index.is_full

    def resize_indexes(self, max_index_size: int) -> None:
        self.offset_index.resize(max_index_size)
        self.time_index.resize(max_index_size)

    def can_hold(self, last_offset: int) -> bool:
        """Whether ``last_offset`` fits the indexes' int32 relative offsets."""
        return 0 <= last_offset - self.base_offset <= INT32_MAX

    def flush(self) -> None:
        """fsync the log file and both indexes."""
        self.offset_index.write_pending(sync=True)
        self.time_index.write_pending(sync=True)
        if self.dirty:
            os.fsync(self.fd)
            self.dirty = False

    def truncate_to(self, offset: int) -> int:
        """Drop the batch holding ``offset`` and everything after; returns bytes removed."""
        self.ensure_loaded()
        found = self.locate(offset)
        if found is None:
            return 0
        position, header = found
        self._tail.clear()
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        os.ftruncate(self.fd, position)
        removed = self.size - position
        self.size = position
        self._writeback_from = min(self._writeback_from, position - position % writeback.PAGE)
        self._next_offset = min(header.base_offset, offset) if position else self.base_offset
        self._recompute_max_timestamp()
        self.bytes_since_index = 0
        self.dirty = True
        if position == 0:
            self._rolling_timestamp = NO_TIMESTAMP
        return removed

    def _recompute_max_timestamp(self) -> None:
        self._max_timestamp, self._offset_of_max_timestamp = self.time_index.last_entry()
        _, position = self.offset_index.lookup(self._offset_of_max_timestamp)
        for _pos, header in scan_headers(self.fd, position, self.size):
            if header.max_timestamp > self._max_timestamp:
                self._max_timestamp = header.max_timestamp
                self._offset_of_max_timestamp = header.last_offset

    # --- recovery ------------------------------------------------------------------------------

    def recover(self, epoch_cache: LeaderEpochCache | None) -> int:
        """Rebuild the indexes from the log, cutting off the first bad batch and all after it.

        Returns the number of bytes truncated. New leader epochs seen in batch headers
        are assigned to ``epoch_cache`` (Kafka's ``LogSegment.recover``).
        """
        self._tail.clear()
        self.offset_index.reset()
        self.time_index.reset()
        self._max_timestamp, self._offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
        self._rolling_timestamp = NO_TIMESTAMP
        self.bytes_since_index = 0
        valid_end, next_offset = self._replay(epoch_cache)
        truncated = self.size - valid_end
        if truncated:
            os.ftruncate(self.fd, valid_end)
            self.size = valid_end
            self.dirty = True
            self._writeback_from = min(self._writeback_from, valid_end - valid_end % writeback.PAGE)
        self._next_offset = next_offset
        self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True)
        self.offset_index.rewrite()
        self.time_index.rewrite()
        return truncated

    def _replay(self, epoch_cache: LeaderEpochCache | None) -> tuple[int, int]:
        stop = ScanStop()
        valid_end, next_offset = 0, self.base_offset
        for position, header in scan_valid_batches(self.fd, self.size, stop):
            if header.base_offset < next_offset or not self.can_hold(header.last_offset):
                break
            if position == 0:
                self._rolling_timestamp = header.max_timestamp
            self._index_batch(header, header.last_offset, position)
            _maybe_assign_epoch(epoch_cache, header)
            valid_end, next_offset = position + header.size, header.next_offset
        return valid_end, next_offset

    # --- reads -----------------------------------------------------------------------------------

    def locate(self, offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch whose last offset is >= ``offset``."""
        if self._tail and offset > self._tail_floor:       # among the last batches appended
            for pos, header in self._tail:
                if header.base_offset + header.last_offset_delta >= offset:
                    return pos, header
            return None
        self.ensure_loaded()
        _, position = self.offset_index.lookup(offset)
        for pos, header in scan_headers(self.fd, position, self.size):
            if header.base_offset + header.last_offset_delta >= offset:
                return pos, header
        return None

    def boundary_at_or_before(self, start: int, limit: int) -> int:
        """The last batch end reachable from ``start`` that is <= ``limit`` (``start`` if none)."""
        if limit >= self.size:
            return self.size
        self.ensure_loaded()
        position = max(start, self.offset_index.floor_position(limit))
        end = position
        for pos, header in scan_headers(self.fd, position, self.size):
            if pos + header.batch_length + 12 > limit:
                break
            end = pos + header.batch_length + 12
        return end

    def read_batch(self, position: int, header: BatchHeader) -> bytes:
        return read_exact(self.fd, header.batch_length + 12, position)

    def batches_from(self, position: int):
        """(position, header) of every batch from ``position`` to the end."""
        return scan_headers(self.fd, position, self.size)

    # --- files ----------------------------------------------------------------------------------

    def write_out_indexes(self) -> None:
        """On roll and close: record the final largest timestamp, write pending entries."""
        if self._next_offset is not _UNKNOWN:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True)
        self.offset_index.write_pending(sync=False)
        self.time_index.write_pending(sync=False)

    def close(self) -> None:
        """Write out pending index entries and close the descriptor."""
        self.write_out_indexes()
        self.close_fd()

    def close_fd(self) -> None:
        """Let go of the descriptor: it closes now, or when the last region read from it is gone."""
        self.fd = -1
        self.file = _CLOSED

    def mark_deleted(self) -> None:
        """Rename all three files with the ``.deleted`` suffix; the descriptor stays valid."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            path = segment_file(self.directory, self.base_offset, suffix)
            try:
                os.replace(path, path.with_name(path.name + DELETED_SUFFIX))
            except FileNotFoundError:
                continue
        self.suffix = DELETED_SUFFIX
        self.offset_index.rename(self.offset_index.path.with_name(self.offset_index.path.name + DELETED_SUFFIX))
        self.time_index.rename(self.time_index.path.with_name(self.time_index.path.name + DELETED_SUFFIX))

    def delete_files(self) -> None:
        """Close the descriptor and remove the files (with their current suffix)."""
        self.close_fd()
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            segment_file(self.directory, self.base_offset, suffix + self.suffix).unlink(missing_ok=True)

    def move_to(self, directory: Path) -> None:
        """Follow a rename of the partition directory."""
        self.directory = directory
        self.offset_index.rename(directory / self.offset_index.path.name)
        self.time_index.rename(directory / self.time_index.path.name)

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, dir={self.directory})"


def _maybe_assign_epoch(epoch_cache: LeaderEpochCache | None, header: BatchHeader) -> None:
    if epoch_cache is None or header.partition_leader_epoch < 0:
        return
    latest = epoch_cache.latest_epoch
    if latest is None or header.partition_leader_epoch > latest:
        epoch_cache.assign(header.partition_leader_epoch, header.base_offset)


def _write_at(fd: int, data, position: int) -> None:
    """Write all of ``data`` at ``position``; on failure cut the file back to ``position``."""
    view = memoryview(data)
    offset = position
    try:
        while view:
            written = os.pwrite(fd, view, offset)
            view = view[written:]
            offset += written
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, position)
        raise
