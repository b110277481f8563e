"""A log directory's own checkpoint files, as the LogManager reads them at start and writes them
on the directory's writer thread: ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint`` (high watermarks) and the
``.kafka_cleanshutdown`` marker. A file whose offsets did not change since it was last written is
not written again (10,000 idle partitions rewrote and fsynced it every 5 s); a write that fails
reports the directory to the LogDirFailureChannel."""
from __future__ import annotations

import logging
from pathlib import Path

from tierlog.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offsets,
    write_offsets,
)
from tierlog.storage.dir_failure import LogDirFailureChannel
from tierlog.storage.errors import CorruptCheckpointError

__all__ = ["CLEAN_SHUTDOWN_FILE", "CheckpointFiles", "read_dir_state", "read_high_watermarks"]

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class CheckpointFiles:
    """Writes checkpoint files that changed (called on each directory's writer thread)."""

    def __init__(self, failures: LogDirFailureChannel) -> None:
        self._failures = failures
        # (log dir, checkpoint file) -> the offsets last written there
        self._written: dict[tuple[Path, str], dict[TopicPartition, int]] = {}

    def write(self, log_dir: Path, files: list[tuple[str, dict[TopicPartition, int]]]) -> None:
        """Write each (file name, offsets) of ``log_dir`` that changed; a failure marks the directory."""
        try:
            for name, offsets in files:
                if self._written.get((log_dir, name)) == offsets:
                    continue
                write_offsets(log_dir / name, offsets)
                self._written[(log_dir, name)] = offsets
        except OSError as exc:
            _log.error("cannot write checkpoints in %s: %s", log_dir, exc)
            self._failures.report(log_dir, f"writing checkpoints: {exc}")


def read_high_watermarks(log_dir: Path) -> dict[TopicPartition, int]:
    """The checkpointed high watermarks; absent or malformed reads as empty (every HW starts at 0)."""
    try:
        return read_offsets(log_dir / REPLICATION_OFFSET_CHECKPOINT)
    except CorruptCheckpointError as exc:
        _log.warning("%s: ignoring %s", log_dir, exc)
        return {}


def read_dir_state(log_dir: Path) -> tuple[bool, dict[TopicPartition, int], dict[TopicPartition, int]]:
    """(clean shutdown?, recovery points, log start offsets); bad checkpoints mean full recovery."""
    clean = (log_dir / CLEAN_SHUTDOWN_FILE).exists()
    try:
        recovery_points = read_offsets(log_dir / RECOVERY_POINT_CHECKPOINT)
    except CorruptCheckpointError as exc:
        _log.warning("%s: ignoring %s, recovering every log", log_dir, exc)
        return False, {}, {}
    try:
        start_offsets = read_offsets(log_dir / LOG_START_OFFSET_CHECKPOINT)
    except CorruptCheckpointError as exc:
        _log.warning("%s: ignoring %s", log_dir, exc)
        start_offsets = {}
    return clean, recovery_points, start_offsets
