"""Walk the batches of a segment file.

``scan_headers`` reads only headers (positioned reads in small chunks) and trusts
the data: the read path uses it on bytes that were validated when appended.
``scan_valid_batches`` reads whole batches in large chunks and checks each one
(magic, sizes, CRC-32C): recovery uses it and stops at the first bad batch.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from tierlog.records.errors import InvalidRecordError
from tierlog.records.header import HEADER, HEADER_SIZE, BatchHeader, batch_size_at
from tierlog.records.validate import validate_batch

__all__ = ["ScanStop", "read_exact", "scan_headers", "scan_valid_batches"]

_HEADER_CHUNK = 8 * 1024
_RECOVERY_CHUNK = 1024 * 1024


def read_exact(fd: int, length: int, position: int) -> bytes:
    """``length`` bytes at ``position`` (fewer only at end of file)."""
    parts = []
    while length > 0:
        chunk = os.pread(fd, length, position)
        if not chunk:
            break
        parts.append(chunk)
        length -= len(chunk)
        position += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def scan_headers(fd: int, start: int, end: int) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each complete batch in [start, end), in file order."""
    unpack = HEADER.unpack_from
    make = BatchHeader._make
    buf = b""
    buf_start = start
    pos = start
    while pos + HEADER_SIZE <= end:
        if pos + HEADER_SIZE > buf_start + len(buf) or pos < buf_start:
            buf = read_exact(fd, min(_HEADER_CHUNK, end - pos), pos)
            buf_start = pos
            if len(buf) < HEADER_SIZE:
                return
        header = make(unpack(buf, pos - buf_start))
        size = header.batch_length + 12
        if size < HEADER_SIZE or pos + size > end:
            return
        yield pos, header
        pos += size


class ScanStop:
    """Where and why ``scan_valid_batches`` stopped (``error`` None at a clean end)."""

    __slots__ = ("error", "position")

    def __init__(self) -> None:
        self.position = 0
        self.error: str | None = None


def scan_valid_batches(fd: int, size: int, stop: ScanStop) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each valid batch from 0; ``stop`` records the valid end."""
    pos = 0
    while pos < size:
        view = memoryview(read_exact(fd, min(_RECOVERY_CHUNK, size - pos), pos))
        if not view:
            _record_stop(stop, pos, "file shorter than its recorded size")
            return
        offset = 0
        while offset < len(view):
            needed = _batch_size_needed(view, offset)
            if pos + offset + needed > size:
                _record_stop(stop, pos + offset, "truncated batch at the end of the file")
                return
            if needed > len(view) - offset:
                if offset:
                    break
                view = memoryview(read_exact(fd, needed, pos))  # one batch larger than the chunk
                if len(view) < needed:
                    _record_stop(stop, pos, "file shorter than its recorded size")
                    return
                continue
            try:
                header = validate_batch(view, offset)
            except InvalidRecordError as exc:
                _record_stop(stop, pos + offset, exc.message)
                return
            yield pos + offset, header
            offset += header.size
        pos += offset
        stop.position = pos


def _batch_size_needed(view, offset: int) -> int:
    """Bytes the batch at ``offset`` claims (at least a header's worth)."""
    if len(view) - offset < HEADER_SIZE:
        return HEADER_SIZE
    return max(batch_size_at(view, offset), HEADER_SIZE)


def _record_stop(stop: ScanStop, position: int, error: str) -> None:
    stop.position = position
    stop.error = error
