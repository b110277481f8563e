"""The leader-epoch side of :class:`~tierlog.storage.log.Log`: the queries of its epoch cache
(OffsetForLeaderEpoch, the epochs of a range, the epoch of an offset), under the log's lock.

A mixin over the log's own state (``_lock``, ``_epochs``, ``log_end_offset``), like
``log_transactions``; ``Log`` is the one class that uses it.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tierlog.storage.epoch_cache import LeaderEpochCache

__all__ = ["LogEpochs"]


class LogEpochs:
    # The state of ``Log`` this mixin works on, declared for the type checker.
    _lock: threading.RLock
    _epochs: LeaderEpochCache

    if TYPE_CHECKING:
        @property
        def log_end_offset(self) -> int: ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= ``epoch``, its end offset), or (-1, -1)."""
        with self._lock:
            return self._epochs.end_offset_for(epoch, self.log_end_offset)

    def epoch_entries(self) -> list[tuple[int, int]]:
        with self._lock:
            return self._epochs.entries()

    def epoch_entries_in_range(self, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
        with self._lock:
            return self._epochs.entries_in_range(start_offset, end_offset)

    def epoch_for_offset(self, offset: int) -> int | None:
        with self._lock:
            return self._epochs.epoch_for_offset(offset)
