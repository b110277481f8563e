"""In-place header rewrites on a ``bytearray``: offsets, leader epoch, LogAppendTime.

baseOffset and partitionLeaderEpoch sit before the CRC'd range, so stamping them
leaves the CRC valid. Setting LogAppendTime changes attributes and maxTimestamp,
which are covered, so the CRC is recomputed (Kafka's ``setMaxTimestamp``; it skips
the rewrite when nothing changes, and so do we).
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from tierlog.records.header import (
    ATTRIBUTES_OFFSET,
    BASE_OFFSET_OFFSET,
    CRC_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET,
    TIMESTAMP_TYPE_BIT,
)

__all__ = [
    "compute_crc",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
]

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


def compute_crc(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """CRC-32C of the batch at ``pos`` (attributes to the end of the batch)."""
    (length,) = _INT32.unpack_from(buf, pos + LENGTH_OFFSET)
    end = pos + LOG_OVERHEAD + length
    with memoryview(buf) as view:
        return crc32c(view[pos + ATTRIBUTES_OFFSET:end])


def set_base_offset(buf: bytearray, pos: int, base_offset: int) -> None:
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buf: bytearray, pos: int, epoch: int) -> None:
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: bytearray, pos: int, now_ms: int) -> None:
    """Mark the batch LogAppendTime with maxTimestamp ``now_ms``; recompute the CRC."""
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
    (max_timestamp,) = _INT64.unpack_from(buf, pos + MAX_TIMESTAMP_OFFSET)
    if attributes & TIMESTAMP_TYPE_BIT and max_timestamp == now_ms:
        return
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, now_ms)
    _UINT32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos))
