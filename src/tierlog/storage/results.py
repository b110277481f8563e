"""What ``Log`` hands back: file regions for fetches, and append/read results."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from tierlog.storage.shared_fd import SharedFd

__all__ = ["AppendResult", "CleaningView", "FileRegion", "ReadResult", "RolledSegment"]


class FileRegion:
    """``length`` bytes at ``offset`` of a segment's open descriptor ``fd``.

    Send it with ``os.sendfile(sock, region.fd, region.offset, len(region))`` or read
    it with ``read()``. The region holds the segment's ``SharedFd``: the descriptor
    stays open (and its number is not reused) while the region lives, even after the
    segment was closed or deleted.
    """

    __slots__ = ("file", "length", "offset")

    def __init__(self, file: SharedFd, offset: int, length: int) -> None:
        self.file = file
        self.offset = offset
        self.length = length

    @property
    def fd(self) -> int:
        return self.file.fd

    def __len__(self) -> int:
        return self.length

    def read(self) -> bytes:
        """The region's bytes (fewer only if the file was truncated meanwhile)."""
        parts = []
        position, remaining = self.offset, self.length
        while remaining > 0:
            chunk = os.pread(self.fd, remaining, position)
            if not chunk:
                break
            parts.append(chunk)
            position += len(chunk)
            remaining -= len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, offset={self.offset}, length={self.length})"


class ReadResult(NamedTuple):
    """Whole batches, as regions in log order; ``size`` is their total length."""

    parts: list[FileRegion]
    size: int

    def to_bytes(self) -> bytes:
        return b"".join(part.read() for part in self.parts)


class AppendResult(NamedTuple):
    base_offset: int
    last_offset: int  # inclusive
    log_append_time_ms: int  # -1 for CreateTime
    log_start_offset: int
    max_timestamp: int
    record_count: int


class RolledSegment(NamedTuple):
    """A segment that is no longer active, as tiered storage uploads it (``Log.rolled_segments``)."""

    base_offset: int
    next_offset: int            # exclusive: the next segment's base offset
    size: int
    max_timestamp_ms: int       # largest record timestamp, or the file's mtime without one
    log_path: Path
    offset_index_path: Path
    time_index_path: Path


class CleaningView(NamedTuple):
    """What the log cleaner takes of a log under its lock (``Log.cleaning_view``):
    the segments (oldest first, the last active) and their sizes then, the offsets,
    each idempotent producer's last offset, the truncation count a swap checks and the
    aborted transactions of its ``.txnindex``."""

    segments: list
    sizes: list[int]
    log_start_offset: int
    log_end_offset: int
    producer_last_offsets: dict[int, int]
    truncations: int
    directory: Path
    timestamps: list[tuple[int, int]]     # per segment: (largest timestamp, first batch's max timestamp)
    aborted: tuple = ()                   # the log's aborted transactions (``txn_index.AbortedTxn``), by marker
