"""The log cleaner's threads: one per log directory (Kafka's LogCleaner and
LogCleanerManager, as a thread like ``dir_writer``'s, off the event loop).

Each pass (``clean_once``) looks at the directory's logs of compacted topics
(cleanup.policy containing ``compact``), computes each one's cleanable range
(``cleaner_rules.log_to_clean``, bounded by the last stable offsets the logs' owner
gives through ``upper_limits_of``, asked once per pass for all of them), picks the filthiest one that should be
cleaned and cleans it (``cleaner.clean_log``), then records the new first dirty
offset in the directory's ``cleaner-offset-checkpoint`` (Kafka's file: version 0,
``topic partition offset`` lines; written tmp + fsync + rename). A pass that
cleaned nothing sleeps log.cleaner.backoff.ms (``wake`` cuts the sleep short).

Memory: log.cleaner.dedupe.buffer.size is shared by the directories' cleaners
(Kafka divides it by log.cleaner.threads) and sizes each clean's offset map
(``OffsetMap.from_buffer`` with log.cleaner.io.buffer.load.factor);
log.cleaner.io.buffer.size is the read and write chunk. A pass that raises is
logged and retried after the backoff; a log taken offline is skipped. ``stop``
ends a clean under way at its next batch.
``cleanup.policy=compact,delete`` logs also get time and size retention from
``LogManager.tick``, as any log with ``delete``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tierlog.config import float_setting, int_setting
from tierlog.storage.checkpoint import read_offsets, write_offsets
from tierlog.storage.cleaner_pass import CleanAborted, clean_log
from tierlog.storage.cleaner_rules import (
    OffsetMap,
    SegmentStat,
    filthiest,
    log_to_clean,
    should_clean,
)
from tierlog.storage.errors import CorruptCheckpointError, KafkaStorageError

if TYPE_CHECKING:
    from tierlog.storage.log import Log

__all__ = ["CLEANER_OFFSET_CHECKPOINT", "CleanerConfig", "LogDirCleaner"]

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
_log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class CleanerConfig:
    """The broker's log.cleaner.* settings (Kafka's names and defaults)."""

    enable: bool = True
    threads: int = 1
    backoff_ms: int = 15000
    dedupe_buffer_size: int = 128 * 1024 * 1024
    io_buffer_size: int = 512 * 1024
    io_buffer_load_factor: float = 0.9

    @classmethod
    def from_props(cls, props: Mapping[str, object]) -> CleanerConfig:
        """From the node's settings keyed by their Kafka names."""
        return cls(bool(props["log.cleaner.enable"]), int_setting(props, "log.cleaner.threads", cls.threads),
                   int_setting(props, "log.cleaner.backoff.ms", cls.backoff_ms),
                   int_setting(props, "log.cleaner.dedupe.buffer.size", cls.dedupe_buffer_size),
                   int_setting(props, "log.cleaner.io.buffer.size", cls.io_buffer_size),
                   float_setting(props, "log.cleaner.io.buffer.load.factor", cls.io_buffer_load_factor))

    @property
    def active(self) -> bool:
        return self.enable and self.threads > 0


class LogDirCleaner:
    """The cleaner of one log directory; ``start`` runs it on its own thread."""

    def __init__(self, log_dir: Path, logs: Callable[[], Mapping[TopicPartition, Log]],
                 upper_limits_of: Callable[[list[TopicPartition]], Mapping[TopicPartition, int | None]],
                 config: CleanerConfig,
                 clock_ms: Callable[[], int], dedupe_buffer_bytes: int) -> None:
        self.log_dir = log_dir
        self.config = config
        self._logs = logs
        self._upper_limits_of = upper_limits_of
        self._clock_ms = clock_ms
        self._dedupe_bytes = dedupe_buffer_bytes
        self._checkpoints = _read_checkpoints(log_dir)
        self._truncations: dict[TopicPartition, int] = {}   # each log's truncation count at the last look
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.cleans = 0               # completed cleans (for tests and logs)

    @property
    def checkpoints(self) -> dict[TopicPartition, int]:
        return dict(self._checkpoints)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"log-cleaner-{self.log_dir.name}", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, wait: bool = True) -> None:
        """Stop after the clean under way (if any); ``wait``: join the thread."""
        self._stop.set()
        self._wake.set()
        if wait and self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                cleaned = self.clean_once(self._clock_ms())
            except Exception:  # noqa: BLE001 - the thread outlives any failed pass, which is logged
                _log.exception("log cleaner of %s failed; retrying after the backoff", self.log_dir)
                cleaned = False
            if not cleaned:
                self._wake.wait(self.config.backoff_ms / 1000)
                self._wake.clear()

    def clean_once(self, now_ms: int) -> bool:
        """One pass: clean the filthiest log that should be cleaned; True if one was."""
        logs = self._logs()
        changed = self._prune(logs)
        candidates = []
        compacted = {key: log for key, log in logs.items() if log.config.compact_enabled and not log.offline}
        limits = self._upper_limits_of(list(compacted)) if compacted else {}
        for key, log in compacted.items():
            try:
                target = self._log_to_clean(key, log, limits.get(key), now_ms)
            except KafkaStorageError:
                continue
            if target.reset_checkpoint:
                self._checkpoints[key] = target.first_dirty_offset
                changed = True
            if should_clean(target, log.config.min_cleanable_ratio):
                candidates.append(((key, log), target))
        chosen = filthiest(candidates)
        if chosen is None:
            if changed:
                self._write_checkpoints()
            return False
        (key, log), target = chosen
        offset_map = OffsetMap.from_buffer(self._dedupe_bytes, self.config.io_buffer_load_factor)
        try:
            result = clean_log(log, target.first_dirty_offset, target.first_uncleanable_offset, now_ms, offset_map,
                               self.config.io_buffer_size, self._stop.is_set)
        except CleanAborted:
            return False
        if result.completed:
            self._checkpoints[key] = result.end_offset
            self.cleans += 1
            _log.info("cleaned %s-%d below offset %d: %d groups, %d -> %d bytes (dirty ratio %.2f)", key[0], key[1],
                      result.end_offset, result.groups_swapped, result.bytes_before, result.bytes_after,
                      target.cleanable_ratio)
        self._write_checkpoints()
        return result.completed

    def _log_to_clean(self, key: TopicPartition, log, upper_limit: int | None, now_ms: int):
        view = log.cleaning_view()
        if self._truncations.get(key, view.truncations) != view.truncations:
            self._checkpoints.pop(key, None)    # truncated: what was clean may be gone, start over
        self._truncations[key] = view.truncations
        stats = [SegmentStat(s.base_offset, size, largest, first)
                 for s, size, (largest, first) in zip(view.segments, view.sizes, view.timestamps, strict=True)]
        config = log.config
        return log_to_clean(stats, view.log_start_offset, view.log_end_offset, self._checkpoints.get(key),
                            upper_limit, config.min_compaction_lag_ms, config.max_compaction_lag_ms,
                            now_ms)

    def _prune(self, logs: Mapping[TopicPartition, Log]) -> bool:
        """Forget the checkpoints of logs no longer in this directory."""
        gone = [key for key in self._checkpoints if key not in logs]
        for key in gone:
            del self._checkpoints[key]
        for key in [k for k in self._truncations if k not in logs]:
            del self._truncations[key]
        return bool(gone)

    def _write_checkpoints(self) -> None:
        try:
            write_offsets(self.log_dir / CLEANER_OFFSET_CHECKPOINT, dict(self._checkpoints))
        except OSError as exc:
            _log.error("cannot write %s in %s: %s", CLEANER_OFFSET_CHECKPOINT, self.log_dir, exc)


def _read_checkpoints(log_dir: Path) -> dict[TopicPartition, int]:
    try:
        return read_offsets(log_dir / CLEANER_OFFSET_CHECKPOINT)
    except (CorruptCheckpointError, OSError) as exc:
        _log.warning("%s: ignoring %s (every compacted log is dirty from its start): %s", log_dir,
                     CLEANER_OFFSET_CHECKPOINT, exc)
        return {}
