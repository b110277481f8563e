"""Kafka's text checkpoint files: a version line, a count line, then one entry a line.

- ``leader-epoch-checkpoint`` (per partition): entries ``<epoch> <startOffset>``.
- ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint`` and
  ``replication-offset-checkpoint`` (high watermarks) (per log directory):
  entries ``<topic> <partition> <offset>``.

Version 0 for all. Writes go through ``atomic_write`` (tmp + fsync + rename).
"""

from __future__ import annotations

from pathlib import Path

from tierlog.storage.errors import CorruptCheckpointError
from tierlog.storage.files import atomic_write

__all__ = [
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "read_checkpoint",
    "read_epoch_entries",
    "read_offsets",
    "write_checkpoint",
    "write_epoch_entries",
    "write_offsets",
]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"   # high watermarks
_VERSION = 0


def write_checkpoint(path: Path, lines: list[str], version: int = _VERSION, sync: bool = True) -> None:
    text = f"{version}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    atomic_write(path, text.encode("utf-8"), sync)


def read_checkpoint(path: Path, fields: int, version: int = _VERSION) -> list[list[str]] | None:
    """Entries split on spaces (each ``fields`` long), or None if the file is absent."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != str(version):
        raise CorruptCheckpointError(f"{path}: unrecognised version line")
    try:
        count = int(lines[1])
    except ValueError:
        raise CorruptCheckpointError(f"{path}: malformed count line {lines[1]!r}") from None
    entries = [line.split() for line in lines[2:] if line.strip()]
    if count != len(entries) or any(len(entry) != fields for entry in entries):
        raise CorruptCheckpointError(f"{path}: expected {count} entries of {fields} fields")
    return entries


def write_epoch_entries(path: Path, entries: list[tuple[int, int]], sync: bool = True) -> None:
    write_checkpoint(path, [f"{epoch} {offset}" for epoch, offset in entries], sync=sync)


def read_epoch_entries(path: Path) -> list[tuple[int, int]] | None:
    entries = read_checkpoint(path, 2)
    if entries is None:
        return None
    return [(_to_int(path, epoch), _to_int(path, offset)) for epoch, offset in entries]


def write_offsets(path: Path, offsets: dict[tuple[str, int], int]) -> None:
    lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    write_checkpoint(path, lines)


def read_offsets(path: Path) -> dict[tuple[str, int], int]:
    """Offsets by (topic, partition); an absent file reads as empty."""
    entries = read_checkpoint(path, 3)
    if entries is None:
        return {}
    return {(topic, _to_int(path, partition)): _to_int(path, offset) for topic, partition, offset in entries}


def _to_int(path: Path, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CorruptCheckpointError(f"{path}: malformed number {text!r}") from None
