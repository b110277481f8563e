"""Kafka's producer state snapshot files: ``<20-digit offset>.snapshot`` (sans-IO codec).

The idempotent producer state of a partition as of an offset (the state of every
producer whose batches lie below it), written when a segment rolls (named by the
new active segment's base offset) and when the log closes, read when it opens so
the state outlives the segments it came from, and uploaded with each segment to
remote storage (KIP-405). Layout (Kafka's ProducerStateManager, version 1), all
big-endian::

    Version int16 (1) | Crc uint32 (CRC-32C of everything after it) |
    ProducerEntries: int32 count, then per producer
      ProducerId int64 | Epoch int16 | LastSequence int32 | LastOffset int64 |
      OffsetDelta int32 | Timestamp int64 | CoordinatorEpoch int32 | CurrentTxnFirstOffset int64

OffsetDelta is the last batch's last offset minus its base offset.
CoordinatorEpoch is that of the producer's latest transaction marker, CurrentTxnFirstOffset the
first offset of its open transaction (-1: none; KIP-98). A producer known only from a marker has
LastSequence -1.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from crc32c import crc32c

__all__ = ["SNAPSHOT_SUFFIX", "ProducerSnapshotError", "SnapshotEntry", "decode_snapshot", "encode_snapshot",
           "snapshot_offset", "snapshot_path"]

SNAPSHOT_SUFFIX = ".snapshot"
VERSION = 1
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
MAX_ENTRIES = 1 << 24           # a bound on what a (possibly corrupt) file may claim


class ProducerSnapshotError(ValueError):
    """A snapshot that is truncated, of an unknown version or fails its CRC."""


class SnapshotEntry(NamedTuple):
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = _COUNT.pack(len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return _HEAD.pack(VERSION, crc32c(body)) + body


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    if len(data) < _HEAD.size + _COUNT.size:
        raise ProducerSnapshotError(f"producer snapshot of {len(data)} bytes is truncated")
    version, crc = _HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise ProducerSnapshotError(f"producer snapshot version {version} is not {VERSION}")
    body = memoryview(data)[_HEAD.size:]
    if crc32c(body) != crc:
        raise ProducerSnapshotError("producer snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body, 0)
    if not 0 <= count <= MAX_ENTRIES or len(body) != _COUNT.size + count * _ENTRY.size:
        raise ProducerSnapshotError(f"producer snapshot claims {count} entries in {len(body)} bytes")
    return [SnapshotEntry(*_ENTRY.unpack_from(body, _COUNT.size + i * _ENTRY.size)) for i in range(count)]


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offset(path: Path) -> int | None:
    """The offset a snapshot file name stands for, or None for other files."""
    stem = path.name[:-len(SNAPSHOT_SUFFIX)] if path.name.endswith(SNAPSHOT_SUFFIX) else ""
    return int(stem) if len(stem) == 20 and stem.isdigit() else None
