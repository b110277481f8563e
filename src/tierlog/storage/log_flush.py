"""A log flush in three steps, so the log's lock is never held across an fsync.

1. ``take_flush`` (under the log's lock): write pending index entries to their
   files, note which descriptors, index files, directory and leader-epoch
   entries need syncing below the target offset, and mark them clean;
2. ``sync_flush`` (lock free): the fsyncs and the epoch checkpoint write;
3. the log advances its recovery point to the target under its lock again,
   unless it was truncated meanwhile (the target may then name data that is
   gone or rewritten; the recovery point stays where the truncation put it).

Flushes of one log run one at a time (the log's flush lock), so a segment
marked clean by a flush in progress is synced before any later flush finishes.
A segment deleted while its sync is pending (its descriptor closed: retention's
delayed delete, the log closed or deleted) is skipped: ``sync_flush`` asks
``still_live`` before it treats an OSError as a disk failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tierlog.storage.epoch_cache import EpochsToWrite, LeaderEpochCache
from tierlog.storage.files import fsync, fsync_dir, fsync_path
from tierlog.storage.segment import LogSegment

__all__ = ["FlushPlan", "sync_flush", "take_flush"]


@dataclass
class FlushPlan:
    target: int                          # the recovery point once synced
    truncations: int                     # the log's truncation count when taken
    files: list[tuple[LogSegment, int]] = field(default_factory=list)       # (segment, its .log fd)
    indexes: list[tuple[LogSegment, Path]] = field(default_factory=list)    # index files to fsync
    directory: Path | None = None        # to fsync (segments created, renamed or deleted)
    epochs: EpochsToWrite | None = None  # leader-epoch-checkpoint to write


def take_flush(segments: Sequence[LogSegment], target: int, truncations: int, directory: Path | None,
               epochs: LeaderEpochCache) -> FlushPlan:
    """What to sync for a flush up to ``target`` of ``segments`` (those from the recovery point on)."""
    plan = FlushPlan(target, truncations, directory=directory)
    for segment in segments:
        if segment.base_offset > target:
            break
        for index in (segment.offset_index, segment.time_index):
            if index.take_unsynced():
                plan.indexes.append((segment, index.path))
        if segment.dirty:
            plan.files.append((segment, segment.fd))
            segment.dirty = False
    plan.epochs = epochs.take_unwritten()
    return plan


def sync_flush(plan: FlushPlan, still_live: Callable[[LogSegment], bool], dir_live: Callable[[Path], bool]) -> None:
    """The fsyncs of ``plan``. An OSError of a segment (or directory) no longer live is
    ignored, and so is a missing index file (moved or deleted; recovery rebuilds a
    missing index anyway); any other OSError propagates."""
    for segment, fd in plan.files:
        try:
            fsync(fd)
        except OSError:
            if still_live(segment):
                raise
    for segment, path in plan.indexes:
        try:
            fsync_path(path)
        except FileNotFoundError:
            continue
        except OSError:
            if still_live(segment):
                raise
    if plan.directory is not None:
        try:
            fsync_dir(plan.directory)
        except OSError:
            if dir_live(plan.directory):
                raise
    if plan.epochs is not None:
        plan.epochs.write()
