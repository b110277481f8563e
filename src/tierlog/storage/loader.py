"""Open a partition directory and recover it (Kafka's LogLoader, simplified).

Steps:

1. Finish or undo a log cleaner's interrupted swap (``swap_recovery``: ``*.cleaned``
   and ``*.swap`` files), then remove leftovers of unfinished operations:
   ``*.deleted`` (segments whose delayed removal did not run) and ``*.tmp``
   (checkpoint writes cut short), and index files without a ``.log``.
2. Open every ``<base>.log`` as a segment.
3. Unless the directory had a clean shutdown, recover the segment holding the
   recovery point and every later one (all of them when the recovery point is
   unknown): each is scanned batch by batch, the first torn / CRC-bad / out of
   order batch and everything after it is cut off, and its indexes are rebuilt.
   If a segment had to be cut, the segments after it are removed.
4. Load the leader epoch cache (rebuilt from batch headers if the checkpoint is
   missing or malformed), add epochs seen during recovery, and truncate it to the
   recovered log end and the log start offset.
5. fsync what recovery rewrote, so the recovery point can be the log end.

A new log (no segment yet) is created with ``sync_new=False`` by a LogManager
that makes it durable later, off the event loop (``LogManager.create``): its
files are written but not fsynced, and its (empty) leader-epoch-checkpoint is
left to the log's first flush. A machine crash before that loses at most an
empty log (recreated from the metadata image) or leaves an empty file, which
reads as absent.
"""

from __future__ import annotations

import bisect
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from tierlog.storage.epoch_cache import LeaderEpochCache
from tierlog.storage.errors import CorruptCheckpointError
from tierlog.storage.files import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TMP_SUFFIX,
    fsync_dir,
    parse_segment_base,
)
from tierlog.storage.log_config import LogConfig
from tierlog.storage.segment import LogSegment
from tierlog.storage.swap_recovery import finish_swaps

__all__ = ["LoadedLog", "load_log"]

_log = logging.getLogger(__name__)


@dataclass
class LoadedLog:
    segments: list[LogSegment]
    epoch_cache: LeaderEpochCache
    log_start_offset: int
    recovery_point: int


def load_log(
    directory: Path,
    config: LogConfig,
    now_ms: int,
    recovery_point: int | None,
    log_start_offset: int | None,
    clean_shutdown: bool,
    sync_new: bool = True,
) -> LoadedLog:
    directory.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(directory)
    segments = _open_segments(directory, config, now_ms)
    epoch_cache, epochs_trusted = _load_epoch_cache(directory)
    created = not segments
    if created:
        base = max(log_start_offset or 0, 0)
        segments = [LogSegment.create(directory, base, config.index_interval_bytes, config.segment_index_bytes, now_ms)]
        if sync_new:
            fsync_dir(directory)
    else:
        first_recovered = _first_to_recover(segments, recovery_point, clean_shutdown)
        if not epochs_trusted:
            _rebuild_epochs(segments[:first_recovered], epoch_cache)
        segments = _recover(segments, first_recovered, epoch_cache)
    log_end = segments[-1].next_offset
    start = _log_start(segments, log_start_offset, log_end, config)
    epoch_cache.truncate_from_end(log_end)
    epoch_cache.truncate_from_start(start)
    if created and not sync_new:
        epoch_cache.write_at_next_flush()   # an empty log's checkpoint: no file to create now
    elif not epochs_trusted:
        epoch_cache.flush()  # like Kafka, the checkpoint exists from the start
    return LoadedLog(segments, epoch_cache, start, log_end)


def _remove_leftovers(directory: Path) -> None:
    finish_swaps(directory)
    logs = set()
    for entry in os.scandir(directory):
        if entry.name.endswith((DELETED_SUFFIX, TMP_SUFFIX)):
            os.unlink(entry.path)
        elif entry.name.endswith(LOG_SUFFIX):
            logs.add(entry.name[: -len(LOG_SUFFIX)])
    for entry in os.scandir(directory):
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            if parse_segment_base(entry.name, suffix) is not None and entry.name[: -len(suffix)] not in logs:
                os.unlink(entry.path)


def _open_segments(directory: Path, config: LogConfig, now_ms: int) -> list[LogSegment]:
    bases = sorted(
        base for base in (parse_segment_base(name, LOG_SUFFIX) for name in os.listdir(directory)) if base is not None
    )
    return [
        LogSegment.open(directory, base, config.index_interval_bytes, config.segment_index_bytes, now_ms)
        for base in bases
    ]


def _load_epoch_cache(directory: Path) -> tuple[LeaderEpochCache, bool]:
    """(cache, trusted); an unreadable checkpoint yields an empty cache to rebuild."""
    try:
        cache = LeaderEpochCache.load(directory)
    except (CorruptCheckpointError, ValueError) as exc:
        _log.warning("%s: rebuilding the leader epoch cache: %s", directory, exc)
        return LeaderEpochCache(directory), False
    return cache, cache.path.exists()


def _first_to_recover(segments: list[LogSegment], recovery_point: int | None, clean_shutdown: bool) -> int:
    if clean_shutdown:
        return len(segments)
    if recovery_point is None:
        return 0
    bases = [segment.base_offset for segment in segments]
    return max(0, bisect.bisect_right(bases, recovery_point) - 1)


def _rebuild_epochs(trusted: list[LogSegment], epoch_cache: LeaderEpochCache) -> None:
    for segment in trusted:
        for _pos, header in segment.batches_from(0):
            latest = epoch_cache.latest_epoch
            if header.partition_leader_epoch >= 0 and (latest is None or header.partition_leader_epoch > latest):
                epoch_cache.assign(header.partition_leader_epoch, header.base_offset)


def _recover(segments: list[LogSegment], first: int, epoch_cache: LeaderEpochCache) -> list[LogSegment]:
    directory = segments[0].directory
    for i in range(first, len(segments)):
        truncated = segments[i].recover(epoch_cache)
        if truncated:
            _log.warning("%s: recovery cut %d bytes off %s", directory, truncated, segments[i].log_path.name)
            for later in segments[i + 1:]:
                _log.warning("%s: recovery removed %s", directory, later.log_path.name)
                later.delete_files()
            segments = segments[: i + 1]
            break
    if first < len(segments):
        for segment in segments[first:]:
            segment.flush()
        fsync_dir(directory)
    return segments


def _log_start(segments: list[LogSegment], checkpointed: int | None, log_end: int, config: LogConfig) -> int:
    first_base = segments[0].base_offset
    # A start below the first segment is kept: older data may live in remote storage, and a
    # broker loads its logs before the metadata says which topics are tiered (``config`` is then
    # the defaults); Log.update_config raises it to the first segment for a topic that is not.
    start = first_base if checkpointed is None else checkpointed
    return min(start, log_end)
