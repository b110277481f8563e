"""High watermark checkpoints (Kafka's ``replication-offset-checkpoint``).

Every hosted ``Partition`` adds its key to ``moved`` (shared with it) whenever its high
watermark may have moved; every ``replica.high.watermark.checkpoint.interval.ms`` (and on
stop) ``write`` hands the moved ones to the log manager, which rewrites the file of each log
dir whose values changed.  An idle broker's checkpoint costs nothing per partition.  A replica
opened again starts from min(checkpointed high watermark, log end offset), so a restart never
shows readers records that were not known committed.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from tierlog.storage import LogManager

__all__ = ["HighWatermarkCheckpoints"]

log = logging.getLogger(__name__)

Key = tuple[str, int]


class HighWatermarkCheckpoints:
    def __init__(self, logs: LogManager, high_watermark_of: Callable[[Key], int | None], interval_ms: int,
                 now_ms: int):
        """``high_watermark_of(key)``: a hosted partition's high watermark, None when not hosted."""
        self._logs = logs
        self._high_watermark_of = high_watermark_of
        self.interval_ms = interval_ms
        self.moved: set[Key] = set()         # shared with the partitions (``Partition.hw_moved``)
        self._last_ms = now_ms

    def due(self, now_ms: int) -> bool:
        return now_ms - self._last_ms >= self.interval_ms

    def restart(self, now_ms: int) -> None:
        """The interval starts again from ``now_ms`` (replication starts)."""
        self._last_ms = now_ms

    def write(self, now_ms: int) -> None:
        """Checkpoint the high watermarks that moved since the last write (queued to each log
        dir's writer thread; the others keep their checkpointed value)."""
        self._last_ms = now_ms
        moved = list(self.moved)
        self.moved.clear()
        values = {}
        for key in moved:
            hw = self._high_watermark_of(key)
            if hw is not None:
                values[key] = hw
        try:
            self._logs.write_high_watermarks(values)
        except Exception:
            log.exception("cannot checkpoint high watermarks")
