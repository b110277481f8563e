"""Leader epoch cache: (epoch -> start offset), persisted as ``leader-epoch-checkpoint``.

Semantics follow Kafka's LeaderEpochFileCache:

- ``assign(epoch, start)`` adds an entry when the epoch differs from the latest or
  the start offset is lower; entries with epoch >= or start >= the new one are
  dropped first, so both columns stay strictly increasing.
- ``end_offset_for(epoch, log_end)`` answers OffsetForLeaderEpoch.
- ``truncate_from_end(end)`` drops entries starting at or after ``end``;
  ``truncate_from_start(start)`` drops entries before ``start`` but keeps the latest
  of them, moved to ``start``.
- ``rebuild_from_remote(entries, log_start, local_start)`` (KIP-405 / KIP-1023's
  follower): the cache of a log restarted empty at ``local_start`` whose log
  start is ``log_start``, from the uploaded checkpoint ``entries`` of the remote
  segment holding ``local_start - 1``: the entries starting below
  ``local_start``, then ``truncate_from_start(log_start)``.

Every change is written through immediately (tmp + fsync + rename), with two
exceptions. With ``defer_additions`` (partition logs), a new latest epoch that
replaces no entry, or that starts at the log end (a new leader's epoch, an
appended batch: the entries it replaces start there too, so they cover no
record), waits for the log's next flush, which writes it before the
recovery point passes it: a crash loses only entries whose batches lie past the
recovery point, and recovery re-adds those from the batches (Kafka stopped
fsyncing the checkpoint on epoch changes too, KAFKA-15046); an entry with no
batch yet (a new leader's epoch) is only needed while that leader lives.
Truncations and rebuilds are still written at once. And when the owner turns
``write_through`` off, then changes are written by its next flush
(``take_unwritten``, run on the log dir's writer thread; recovery re-adds epochs
seen in the batches, so a checkpoint a crash left behind is repaired).

A deferred write (``take_unwritten``) runs later on the log dir's writer thread while
the event loop may write a truncation through: writes of one cache are serialized by
a lock and numbered by the change they reflect, so a deferred write older than what
is already on disk is dropped instead of putting truncated epochs back.
"""

from __future__ import annotations

import bisect
import threading
from pathlib import Path
from typing import NamedTuple

from tierlog.storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    read_epoch_entries,
    write_epoch_entries,
)

__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochsToWrite", "LeaderEpochCache"]

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """In-memory list of (epoch, start offset), both strictly increasing."""

    def __init__(self, directory: Path, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = directory / LEADER_EPOCH_CHECKPOINT
        self.write_through = True
        self.defer_additions = False     # a new latest epoch waits for the owner's next flush
        self._unwritten = False
        self._generation = 0             # counts the changes
        self._written_generation = 0     # the change the file on disk reflects
        self._write_lock = threading.Lock()
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or []:
            self._add(epoch, start)

    @classmethod
    def load(cls, directory: Path) -> LeaderEpochCache:
        """Read the checkpoint (absent = empty); CorruptCheckpointError if malformed."""
        return cls(directory, read_epoch_entries(directory / LEADER_EPOCH_CHECKPOINT) or [])

    # --- queries ----------------------------------------------------------------------------

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def latest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[-1], self._starts[-1]) if self._epochs else None

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= ``epoch``, its end offset), or (-1, -1) when unknown."""
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        """Epoch of the entry covering ``offset``, None before the first entry."""
        index = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[index] if index >= 0 else None

    def entries_in_range(self, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
        """Entries covering [start_offset, end_offset), the first moved up to start_offset."""
        copy = LeaderEpochCache(self.path.parent, self.entries())
        if start_offset >= 0:
            copy._truncate_from_start(start_offset)
        copy._truncate_from_end(end_offset)
        return copy.entries()

    # --- changes (each persisted) ------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int, at_log_end: bool = False) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        ``at_log_end``: ``start_offset`` is the log end (a leader's new epoch, an appended
        batch), so an entry it replaces starts there too and covers no record: with
        ``defer_additions`` the change can wait for the next flush like any addition.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and self._epochs[-1] == epoch and start_offset >= self._starts[-1]:
            return False
        replaced = False
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
            replaced = True
        self._add(epoch, start_offset)
        if self.defer_additions and (at_log_end or not replaced):
            self._generation += 1
            self._unwritten = True
        else:
            self._changed()
        return True

    def assign_leader_epoch(self, leader_epoch: int, start_offset: int) -> None:
        """A leader's append or new epoch: a new latest epoch is added, the latest is left
        alone, an epoch below the latest is an AssertionError, a negative one ignored."""
        if leader_epoch < 0:
            return
        latest = self.latest_epoch
        if latest is not None and leader_epoch < latest:
            raise AssertionError(f"append with leader epoch {leader_epoch} below the latest epoch {latest}")
        if latest is None or leader_epoch > latest:
            self.assign(leader_epoch, start_offset, at_log_end=True)

    def assign_from_batch(self, partition_leader_epoch: int, base_offset: int) -> None:
        """A replicated batch: its epoch is added when above the latest (or the first)."""
        latest = self.latest_epoch
        if partition_leader_epoch >= 0 and (latest is None or partition_leader_epoch > latest):
            self.assign(partition_leader_epoch, base_offset, at_log_end=True)

    def truncate_from_end(self, end_offset: int) -> bool:
        if self._truncate_from_end(end_offset):
            self._changed()
            return True
        return False

    def truncate_from_start(self, start_offset: int) -> bool:
        if self._truncate_from_start(start_offset):
            self._changed()
            return True
        return False

    def rebuild_from_remote(self, entries: list[tuple[int, int]], log_start_offset: int,
                            local_log_start_offset: int) -> None:
        """Replace the cache with ``entries`` (an uploaded checkpoint) kept for [log start, local start)."""
        self._epochs.clear()
        self._starts.clear()
        for epoch, start in entries:
            if start < local_log_start_offset:
                self.assign_leader_epoch(epoch, start)
        self._truncate_from_start(log_start_offset)
        self._changed()

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()
        self._changed()

    def flush(self, sync: bool = True) -> None:
        self._write(self._generation, self.entries(), sync)
        self._unwritten = False

    def write_at_next_flush(self) -> None:
        """Leave the checkpoint file to the owner's next flush (``take_unwritten``)."""
        self._generation += 1
        self._unwritten = True

    def take_unwritten(self) -> EpochsToWrite | None:
        """The entries to write if changed since the last write (the caller runs ``write()``), else None."""
        if not self._unwritten:
            return None
        self._unwritten = False
        return EpochsToWrite(self, self._generation, self.entries())

    def _write(self, generation: int, entries: list[tuple[int, int]], sync: bool = True) -> None:
        with self._write_lock:
            if generation < self._written_generation:
                return                      # a later change is on disk already
            write_epoch_entries(self.path, entries, sync)
            self._written_generation = generation

    def _changed(self) -> None:
        self._generation += 1
        if self.write_through:
            self.flush()
        else:
            self._unwritten = True

    def _add(self, epoch: int, start: int) -> None:
        if self._epochs and (epoch <= self._epochs[-1] or start <= self._starts[-1]):
            raise ValueError(f"epoch entries must increase: ({epoch}, {start}) after {self.latest_entry}")
        self._epochs.append(epoch)
        self._starts.append(start)

    def _truncate_from_end(self, end_offset: int) -> bool:
        keep = bisect.bisect_left(self._starts, end_offset)
        if end_offset < 0 or keep == len(self._starts):
            return False
        del self._epochs[keep:]
        del self._starts[keep:]
        return True

    def _truncate_from_start(self, start_offset: int) -> bool:
        covered = bisect.bisect_right(self._starts, start_offset)
        if covered == 0:
            return False
        latest_before = self._epochs[covered - 1]
        unchanged = covered == 1 and self._starts[0] == start_offset
        del self._epochs[:covered]
        del self._starts[:covered]
        self._epochs.insert(0, latest_before)
        self._starts.insert(0, start_offset)
        return not unchanged


class EpochsToWrite(NamedTuple):
    """A deferred checkpoint write, taken with the log's lock, run on its writer thread."""
    cache: LeaderEpochCache
    generation: int
    entries: list[tuple[int, int]]

    def write(self) -> None:
        self.cache._write(self.generation, self.entries)
