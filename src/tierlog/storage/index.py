"""Sparse segment indexes: ``.index`` (offset -> position) and ``.timeindex``.

File formats are Kafka's (big-endian):

- ``.index``: 8-byte entries (relative offset int32, file position int32). An entry
  maps the last offset of a batch to the position where that batch starts.
- ``.timeindex``: 12-byte entries (timestamp int64, relative offset int32): the
  largest timestamp seen so far in the segment and the offset it was seen at.

Unlike Kafka (preallocated, memory-mapped files trimmed on roll), the files here
are plain append-only: entries live in ``array`` columns in memory and are written
out on flush, roll and close. A crash can therefore lose index entries, never log
data, and recovery rebuilds the indexes of every unflushed segment anyway.
Indexes of old segments load lazily on first use; a file failing the sanity
checks (size not a multiple of the entry size, entries not increasing, offsets
below the base) raises ``CorruptIndexError`` and the segment rebuilds it.
"""

from __future__ import annotations

import os
import struct
import sys
from abc import ABC, abstractmethod
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path

from tierlog.storage.errors import CorruptIndexError

__all__ = ["OFFSET_ENTRY_SIZE", "TIME_ENTRY_SIZE", "OffsetIndex", "TimeIndex"]

OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12
_TIME_ENTRY = struct.Struct(">qi")
_INT32_MAX = 2**31 - 1
_NO_TIMESTAMP = -1


def _strictly_increasing(column: array) -> bool:
    values = column.tolist()
    return values == sorted(set(values))


def _non_decreasing(column: array) -> bool:
    values = column.tolist()
    return values == sorted(values)


class _IndexFile(ABC):
    """Shared file handling: lazy load, pending entries, truncate, rewrite, fsync."""

    ENTRY_SIZE = 0

    def __init__(self, path: Path, base_offset: int, max_index_size: int, loaded: bool) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_index_size // self.ENTRY_SIZE
        self._loaded = loaded
        self._persisted = 0  # entries already in the file
        self._synced = True

    def __len__(self) -> int:
        self.ensure_loaded()
        return len(self._keys())

    @property
    def is_full(self) -> bool:
        if not self._loaded:
            self.ensure_loaded()
        return len(self._keys()) >= self.max_entries

    def resize(self, max_index_size: int) -> None:
        self.max_entries = max_index_size // self.ENTRY_SIZE

    def ensure_loaded(self) -> None:
        if self._loaded:
            return
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            raise CorruptIndexError(f"{self.path} is missing") from None
        if len(data) % self.ENTRY_SIZE:
            raise CorruptIndexError(f"{self.path} size {len(data)} is not a multiple of {self.ENTRY_SIZE}")
        self._decode(data)
        self._check()
        self._loaded = True
        self._persisted = len(self._keys())

    def reset(self) -> None:
        """Drop every entry (before a rebuild); the file follows on ``rewrite``."""
        self._clear()
        self._loaded = True

    def write_pending(self, sync: bool) -> None:
        """Append entries not yet in the file; fsync if ``sync``."""
        if not self._loaded:
            return
        pending = len(self._keys()) - self._persisted
        if pending > 0 or (sync and not self._synced):
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                if pending > 0:
                    _write_all(fd, self._encode(self._persisted), self._persisted * self.ENTRY_SIZE)
                    self._persisted += pending
                    self._synced = False
                if sync:
                    os.fsync(fd)
                    self._synced = True
            finally:
                os.close(fd)

    def take_unsynced(self) -> bool:
        """Write pending entries (no fsync); True if the file then needs an fsync, which the
        caller does (the file counts as synced from now on)."""
        self.write_pending(sync=False)
        unsynced, self._synced = not self._synced, True
        return unsynced

    def rewrite(self) -> None:
        """Replace the whole file with the in-memory entries."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, self._encode(0), 0)
        finally:
            os.close(fd)
        self._persisted = len(self._keys())
        self._synced = False

    def _truncate_entries(self, keep: int) -> None:
        self._cut(keep)
        if self._persisted > keep:
            os.truncate(self.path, keep * self.ENTRY_SIZE)
            self._persisted = keep
            self._synced = False

    def rename(self, path: Path) -> None:
        self.path = path

    @abstractmethod
    def _keys(self) -> array:
        """The column whose length is the entry count."""

    @abstractmethod
    def _decode(self, data: bytes) -> None:
        """Load the columns from file bytes."""

    @abstractmethod
    def _encode(self, start: int) -> bytes:
        """File bytes of the entries from ``start`` on."""

    @abstractmethod
    def _check(self) -> None:
        """Raise CorruptIndexError unless the entries are sane."""

    @abstractmethod
    def _clear(self) -> None:
        """Drop all entries."""

    @abstractmethod
    def _cut(self, keep: int) -> None:
        """Keep the first ``keep`` entries."""


class OffsetIndex(_IndexFile):
    """Relative offsets and positions in two int32 columns."""

    ENTRY_SIZE = OFFSET_ENTRY_SIZE

    def __init__(self, path: Path, base_offset: int, max_index_size: int, loaded: bool) -> None:
        super().__init__(path, base_offset, max_index_size, loaded)
        self._offsets = array("i")
        self._positions = array("i")

    @property
    def last_offset(self) -> int:
        """Absolute offset of the last entry, the base offset if empty."""
        self.ensure_loaded()
        return self.base_offset + self._offsets[-1] if self._offsets else self.base_offset

    @property
    def last_position(self) -> int:
        self.ensure_loaded()
        return self._positions[-1] if self._positions else 0

    def append(self, offset: int, position: int) -> None:
        self.ensure_loaded()
        relative = offset - self.base_offset
        if self._offsets and relative <= self._offsets[-1]:
            raise AssertionError(f"index offset {offset} not above the last entry in {self.path}")
        if not 0 <= relative <= _INT32_MAX:
            raise AssertionError(f"offset {offset} does not fit segment {self.base_offset}")
        self._offsets.append(relative)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry with offset <= ``offset``; else (base, 0)."""
        self.ensure_loaded()
        i = bisect_right(self._offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def floor_position(self, position: int) -> int:
        """The largest indexed batch position <= ``position`` (0 if none)."""
        self.ensure_loaded()
        i = bisect_right(self._positions, position) - 1
        return self._positions[i] if i >= 0 else 0

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose offset is >= ``offset``."""
        self.ensure_loaded()
        self._truncate_entries(bisect_left(self._offsets, offset - self.base_offset))

    def check_positions(self, log_size: int) -> None:
        if self._positions and self._positions[-1] >= log_size:
            raise CorruptIndexError(f"{self.path} points past the end of the log ({log_size} bytes)")

    def _keys(self) -> array:
        return self._offsets

    def _decode(self, data: bytes) -> None:
        both = array("i", data)
        if sys.byteorder == "little":
            both.byteswap()
        self._offsets = both[0::2]
        self._positions = both[1::2]

    def _encode(self, start: int) -> bytes:
        count = len(self._offsets) - start
        both = array("i", bytes(8 * count))
        both[0::2] = self._offsets[start:]
        both[1::2] = self._positions[start:]
        if sys.byteorder == "little":
            both.byteswap()
        return both.tobytes()

    def _check(self) -> None:
        if self._offsets and self._offsets[0] < 0:
            raise CorruptIndexError(f"{self.path} has an offset below the base offset")
        if not _strictly_increasing(self._offsets) or not _non_decreasing(self._positions):
            raise CorruptIndexError(f"{self.path} entries are not increasing")

    def _clear(self) -> None:
        self._offsets = array("i")
        self._positions = array("i")

    def _cut(self, keep: int) -> None:
        del self._offsets[keep:]
        del self._positions[keep:]


class TimeIndex(_IndexFile):
    """Timestamps (int64) and relative offsets (int32) in two columns."""

    ENTRY_SIZE = TIME_ENTRY_SIZE

    def __init__(self, path: Path, base_offset: int, max_index_size: int, loaded: bool) -> None:
        super().__init__(path, base_offset, max_index_size, loaded)
        self._timestamps = array("q")
        self._offsets = array("i")

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, (-1, base offset) if empty."""
        self.ensure_loaded()
        if not self._timestamps:
            return _NO_TIMESTAMP, self.base_offset
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append if ``timestamp`` is above the last entry's (Kafka's maybeAppend)."""
        self.ensure_loaded()
        if timestamp <= (self._timestamps[-1] if self._timestamps else _NO_TIMESTAMP):
            return
        if not skip_full_check and len(self._timestamps) >= self.max_entries:
            raise AssertionError(f"time index {self.path} is full")
        relative = offset - self.base_offset
        if self._offsets and relative < self._offsets[-1]:
            raise AssertionError(f"time index offset {offset} below the last entry in {self.path}")
        self._timestamps.append(timestamp)
        self._offsets.append(relative)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with timestamp <= ``timestamp``; else (-1, base)."""
        self.ensure_loaded()
        i = bisect_right(self._timestamps, timestamp) - 1
        if i < 0:
            return _NO_TIMESTAMP, self.base_offset
        return self._timestamps[i], self.base_offset + self._offsets[i]

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose offset is >= ``offset``."""
        self.ensure_loaded()
        self._truncate_entries(bisect_left(self._offsets, offset - self.base_offset))

    def _keys(self) -> array:
        return self._timestamps

    def _decode(self, data: bytes) -> None:
        rows = list(_TIME_ENTRY.iter_unpack(data))
        self._timestamps = array("q", [row[0] for row in rows])
        self._offsets = array("i", [row[1] for row in rows])

    def _encode(self, start: int) -> bytes:
        pack = _TIME_ENTRY.pack
        return b"".join(pack(t, o) for t, o in zip(self._timestamps[start:], self._offsets[start:]))

    def _check(self) -> None:
        if self._offsets and self._offsets[0] < 0:
            raise CorruptIndexError(f"{self.path} has an offset below the base offset")
        if not _strictly_increasing(self._timestamps) or not _non_decreasing(self._offsets):
            raise CorruptIndexError(f"{self.path} entries are not increasing")

    def _clear(self) -> None:
        self._timestamps = array("q")
        self._offsets = array("i")

    def _cut(self, keep: int) -> None:
        del self._timestamps[keep:]
        del self._offsets[keep:]


def _write_all(fd: int, data: bytes, position: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written
