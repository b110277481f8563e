"""Finish or undo a log cleaner's swap left by a crash (Kafka's LogLoader handling of
``.cleaned`` and ``.swap`` files), before a partition's segments are opened.

How the cleaner swaps (``Log.replace_segments``): it writes ``<base>.log.cleaned``
(+ ``.index.cleaned``, ``.timeindex.cleaned``) and fsyncs them; renames them to
``.swap`` (indexes first, the ``.log`` last); renames the replaced segments'
files to ``.deleted``; renames the ``.swap`` files to their plain names (indexes
first, the ``.log`` last). A cleaned segment always ends where the segments it
replaces end (the cleaner keeps each group's last batch), so its offset range
[base, end) holds exactly the replaced segments' base offsets.

At recovery:

1. every ``.cleaned`` file is deleted: the swap had not begun (or only some of its
   files were renamed), the replaced segments are all still there; a ``.swap`` file
   based at or above the lowest ``.cleaned`` base is deleted too (Kafka's rule: it
   belongs to a swap interrupted while renaming ``.cleaned`` to ``.swap``);
2. each remaining ``<base>.log.swap`` is complete (renamed after its fsync): every
   plain segment whose base lies in [base, end of the swap's last valid batch) is
   deleted (a replaced segment not yet renamed ``.deleted``), and the ``.swap``
   files are renamed to their plain names. Index files the swap lacks are rebuilt
   when the segment loads;
3. ``.deleted`` files (replaced segments) are removed by the loader as usual.

Every crash point thus leaves either the replaced segments or the cleaned one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path

from tierlog.storage.batch_scan import ScanStop, scan_valid_batches
from tierlog.storage.files import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    fsync_dir,
    parse_segment_base,
    segment_file,
)

__all__ = ["finish_swaps"]

_log = logging.getLogger(__name__)
_SUFFIXED = re.compile(r"^(\d{20})\.(log|index|timeindex)(\.[a-z]+)$")
_SEGMENT_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX)    # renamed in this order


def _suffixed(names: list[str], suffix: str) -> dict[int, list[str]]:
    """Base offset -> names of the segment files ending with ``suffix``."""
    out: dict[int, list[str]] = {}
    for name in names:
        match = _SUFFIXED.match(name)
        if match and match.group(3) == suffix:
            out.setdefault(int(match.group(1)), []).append(name)
    return out


def finish_swaps(directory: Path) -> bool:
    """Apply the recovery rules above; True if anything changed on disk."""
    names = os.listdir(directory)
    cleaned = _suffixed(names, CLEANED_SUFFIX)
    swaps = _suffixed(names, SWAP_SUFFIX)
    for files in cleaned.values():
        for name in files:
            os.unlink(directory / name)
    lowest_cleaned = min(cleaned, default=None)
    for base in sorted(swaps):
        if lowest_cleaned is not None and base >= lowest_cleaned:
            _unlink_all(directory, swaps[base])
            continue
        end = _end_offset(segment_file(directory, base, LOG_SUFFIX + SWAP_SUFFIX))
        if end is None:
            _log.warning("%s: dropping the unusable swap segment %d", directory, base)
            _unlink_all(directory, swaps[base])
            continue
        _replace_with_swap(directory, base, end)
    changed = bool(cleaned or swaps)
    if changed:
        fsync_dir(directory)
    return changed


def _replace_with_swap(directory: Path, base: int, end: int) -> None:
    for name in os.listdir(directory):
        old = parse_segment_base(name, LOG_SUFFIX)
        if old is not None and base <= old < end:
            _log.info("%s: completing the swap of cleaned segment %d: removing segment %d", directory, base, old)
            for suffix in _SEGMENT_SUFFIXES:
                segment_file(directory, old, suffix).unlink(missing_ok=True)
    for suffix in _SEGMENT_SUFFIXES:
        with contextlib.suppress(FileNotFoundError):
            os.replace(segment_file(directory, base, suffix + SWAP_SUFFIX), segment_file(directory, base, suffix))


def _end_offset(path: Path) -> int | None:
    """The offset after the last valid batch of ``path``; None if it has none or is missing."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        end = None
        for _pos, header in scan_valid_batches(fd, os.fstat(fd).st_size, ScanStop()):
            end = header.next_offset
        return end
    finally:
        os.close(fd)


def _unlink_all(directory: Path, names: list[str]) -> None:
    for name in names:
        (directory / name).unlink(missing_ok=True)
