"""Kafka's file and directory names, and crash-safe small-file writes.

Partition directory: ``<topic>-<partition>``; while being deleted
``<topic>-<partition>.<32 hex>-delete``. Segment files: 20-digit zero-padded base
offset + ``.log`` / ``.index`` / ``.timeindex``; a deleted segment's files get the
extra suffix ``.deleted`` until removed; the log cleaner writes ``.cleaned`` files and
renames them ``.swap`` while swapping them in. Small files (checkpoints,
partition.metadata) are written to ``<name>.tmp``, fsynced, renamed over the
target and the directory fsynced, so a crash leaves the old or the new content.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

__all__ = [
    "CLEANED_SUFFIX",
    "DELETED_SUFFIX",
    "DELETE_DIR_SUFFIX",
    "FUTURE_DIR_SUFFIX",
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "STRAY_DIR_SUFFIX",
    "SWAP_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TMP_SUFFIX",
    "atomic_write",
    "fsync",
    "fsync_dir",
    "parse_partition_dir",
    "parse_segment_base",
    "partition_dir_name",
    "segment_file",
    "set_test_disk_delay_ms",
    "slow_disk",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"   # a segment the log cleaner is writing
SWAP_SUFFIX = ".swap"         # a cleaned segment being swapped in
TMP_SUFFIX = ".tmp"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"

_SEGMENT_NAME = re.compile(r"^(\d{20})(\.[a-z]+)$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    """``<directory>/<20-digit base offset><suffix>``."""
    return directory / f"{base_offset:020d}{suffix}"


def parse_segment_base(name: str, suffix: str) -> int | None:
    """Base offset of a segment file name with exactly ``suffix``, else None."""
    match = _SEGMENT_NAME.match(name)
    if match is None or match.group(2) != suffix:
        return None
    return int(match.group(1))


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a live partition directory name, else None."""
    if name.endswith((DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)):
        return None
    match = _PARTITION_DIR.match(name)
    if match is None:
        return None
    return match.group(1), int(match.group(2))


def atomic_write(path: Path, data: bytes, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` crash-safely (tmp file, fsync, rename, dir fsync).

    ``sync=False`` skips both fsyncs: the replace is atomic for a process crash, and the
    caller makes it durable later (``fsync_path`` of the file, then its directory).
    """
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync:
        fsync_dir(path.parent)


_test_disk_delay_s = 0.0        # test only: 0 unless the nemesis made this node's disk slow


def set_test_disk_delay_ms(delay_ms: int) -> None:
    """Test only: every log append and every fsync of the storage layer takes ``delay_ms`` longer
    (a slow disk; server/test_faults.py, for a node started with ``tierlog.test.faults.file``)."""
    global _test_disk_delay_s
    _test_disk_delay_s = max(0, delay_ms) / 1000


def slow_disk() -> None:
    """The test-only disk delay, if one is set (a no-op otherwise)."""
    if _test_disk_delay_s:
        time.sleep(_test_disk_delay_s)


def fsync(fd: int) -> None:
    """``os.fsync`` after the test-only disk delay."""
    slow_disk()
    os.fsync(fd)


def fsync_path(path: Path) -> None:
    """fsync a file by name (its contents and size)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """fsync a directory so renames and new files in it are durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fsync(fd)
    finally:
        os.close(fd)
