"""One replica's log of a TIERED partition, for ``tiered_repl_sim`` (a model of ``storage.Log``).

Records live in ``entries`` by offset (None below the local log start: not
held locally); the leader-epoch cache is tierlog's real ``LeaderEpochCache``
(in memory: write-through off, nothing is ever written); segments are base
offsets rolled at this replica's own random sizes (so segments differ between
replicas, as uploads of different leaders do). The writes follow ``Log``:

- ``append``: the batch's epoch goes to the cache (``assign_from_batch``);
- ``truncate_to(o)``: as ``Log.truncate_to`` -- nothing at or past the log end
  (the cache is left alone then, as in Log), below the local log start a full
  truncation (the cache cleared, log start = o), else the suffix and the
  cache's entries from ``o``;
- ``restart_at(o, log start)``: ``Log.truncate_fully_and_start_at``;
- ``rebuild_from_remote``: ``Log.rebuild_from_remote`` (the real
  ``LeaderEpochCache.rebuild_from_remote``);
- ``raise_log_start``: ``Log.increment_log_start_offset`` (the local log start
  follows: records below the log start are no longer served);
- ``delete_local_segments(n)``: local retention (``local_segments_to_delete``).
"""
from __future__ import annotations

import random
from pathlib import Path

from tierlog.replication import FollowerLogReads
from tierlog.storage.epoch_cache import LeaderEpochCache
from tierlog.tiered.copy_rules import LocalSegment

RECORD_BYTES = 10
_NOWHERE = Path("/nonexistent/tierlog-sim")      # the cache never writes (write_through off)


class TieredLog(FollowerLogReads):
    def __init__(self, rng: random.Random, start_ms: int) -> None:
        self.rng = rng
        self.entries: list[tuple[int, str] | None] = []
        self.cache = LeaderEpochCache(_NOWHERE)
        self.cache.write_through = False
        self.log_start_offset = 0
        self.local_start = 0
        self.bases = [0]
        self.next_roll = self._roll_size()
        self.flushed = 0
        self.highest_remote = -1                  # Log.highest_offset_in_remote_storage
        self.local_log_start_timestamp = start_ms  # KIP-1303
        self.locally_deleted = 0                   # unused (the base sim's fault reads it)

    def _roll_size(self) -> int:
        return self.rng.randint(5, 25)

    # --- FollowerLog --------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return len(self.entries)

    @property
    def latest_epoch(self) -> int | None:
        return self.cache.latest_epoch

    @property
    def local_log_size_bytes(self) -> int:
        return RECORD_BYTES * (self.log_end_offset - self.local_start)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.cache.end_offset_for(epoch, self.log_end_offset)

    # --- writes --------------------------------------------------------------------------------
    def assign_epoch(self, epoch: int, start: int) -> None:
        """A new leader's epoch at its log end (ReplicaManager on becoming leader)."""
        self.cache.assign(epoch, start)

    def append(self, epoch: int, value: str) -> int:
        offset = self.log_end_offset
        self.cache.assign_from_batch(epoch, offset)
        self.entries.append((epoch, value))
        if self.log_end_offset - self.bases[-1] >= self.next_roll:
            self.bases.append(self.log_end_offset)
            self.next_roll = self._roll_size()
        return offset

    def truncate_to(self, offset: int) -> None:
        if offset >= self.log_end_offset:
            return
        if offset < self.local_start:
            self.restart_at(offset, offset)
            return
        del self.entries[offset:]
        self.bases = [b for b in self.bases if b < offset] or [offset]
        self.cache.truncate_from_end(offset)
        self.log_start_offset = min(self.log_start_offset, offset)
        self.flushed = min(self.flushed, offset)

    def restart_at(self, offset: int, log_start: int) -> None:
        self.entries = [None] * offset
        self.cache.clear()
        self.log_start_offset = log_start
        self.local_start = offset
        self.bases = [offset]
        self.flushed = offset

    def rebuild_from_remote(self, log_start: int, local_start: int, epochs: list[tuple[int, int]]) -> None:
        self.restart_at(local_start, log_start)
        self.cache.rebuild_from_remote(epochs, log_start, local_start)

    def raise_log_start(self, offset: int) -> None:
        if offset <= self.log_start_offset:
            return
        assert offset <= self.log_end_offset, (offset, self.log_end_offset)
        self.log_start_offset = offset
        self.cache.truncate_from_start(offset)
        self._raise_local_start(offset)              # Log's local start floor

    def segments(self) -> list[LocalSegment]:
        ends = [*self.bases[1:], self.log_end_offset]
        last = len(self.bases) - 1
        return [LocalSegment(base, end, RECORD_BYTES * (end - base), 0, active=i == last)
                for i, (base, end) in enumerate(zip(self.bases, ends, strict=True))]

    def delete_local_segments(self, count: int) -> None:
        new_start = self.bases[count]
        del self.bases[:count]
        self._raise_local_start(new_start)

    def _raise_local_start(self, offset: int) -> None:
        for o in range(self.local_start, offset):
            self.entries[o] = None
        self.local_start = max(self.local_start, offset)
