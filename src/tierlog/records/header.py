"""Record batch v2 header (magic 2), parsed with one ``struct.unpack_from``.

Layout (61 bytes, big-endian)::

    0  baseOffset            int64
    8  batchLength           int32   bytes after this field
    12 partitionLeaderEpoch  int32
    16 magic                 int8    = 2
    17 crc                   uint32  CRC-32C of attributes .. end of batch
    21 attributes            int16   bits 0-2 codec, 3 timestamp type,
                                     4 transactional, 5 control, 6 delete horizon
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordsCount          int32
    61 records ...
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

__all__ = [
    "ATTRIBUTES_OFFSET",
    "BASE_OFFSET_OFFSET",
    "BASE_TIMESTAMP_OFFSET",
    "CRC_OFFSET",
    "HEADER",
    "HEADER_SIZE",
    "LAST_OFFSET_DELTA_OFFSET",
    "LENGTH_OFFSET",
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "MAGIC_V2",
    "MAX_TIMESTAMP_OFFSET",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_TIMESTAMP",
    "PARTITION_LEADER_EPOCH_OFFSET",
    "RECORDS_COUNT_OFFSET",
    "TIMESTAMP_TYPE_BIT",
    "BatchHeader",
    "TimestampType",
    "attributes_for",
    "base_offset_at",
    "batch_size_at",
    "last_offset_at",
    "max_timestamp_at",
    "parse_header",
]

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted in batchLength
MAGIC_V2 = 2

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
RECORDS_COUNT_OFFSET = 57

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PARTITION_LEADER_EPOCH = -1

CODEC_MASK = _CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = _CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40


class TimestampType(IntEnum):
    """Kafka's ``TimestampType`` ids (attribute bit 3 selects between 0 and 1)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class BatchHeader(NamedTuple):
    """The 61-byte v2 batch header, field for field."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        """Codec id, bits 0-2 (see ``CompressionType``)."""
        return self.attributes & _CODEC_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & TIMESTAMP_TYPE_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _DELETE_HORIZON_BIT)

    @property
    def last_offset(self) -> int:
        """Offset of the last record (inclusive)."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """Offset after the batch (exclusive end)."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Total bytes of the batch on the wire / on disk: batchLength + 12."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID


_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


def base_offset_at(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The baseOffset of the batch at ``pos``; needs LENGTH_OFFSET (8) bytes there."""
    return int(_INT64.unpack_from(buf, pos + BASE_OFFSET_OFFSET)[0])


def batch_size_at(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """Bytes the batch at ``pos`` claims (batchLength + 12); needs 12 bytes there."""
    return LOG_OVERHEAD + int(_INT32.unpack_from(buf, pos + LENGTH_OFFSET)[0])


def last_offset_at(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The last offset of the batch at ``pos`` (baseOffset + lastOffsetDelta); needs 27 bytes."""
    return base_offset_at(buf, pos) + int(_INT32.unpack_from(buf, pos + LAST_OFFSET_DELTA_OFFSET)[0])


def max_timestamp_at(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The maxTimestamp of the batch at ``pos``; needs 43 bytes there."""
    return int(_INT64.unpack_from(buf, pos + MAX_TIMESTAMP_OFFSET)[0])


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos``; the caller guarantees 61 bytes are there."""
    return BatchHeader._make(HEADER.unpack_from(buf, pos))


def attributes_for(
    compression: int,
    timestamp_type: int,
    transactional: bool = False,
    control: bool = False,
) -> int:
    """Compose the attributes int16 from its parts."""
    attributes = compression & _CODEC_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_BIT
    if transactional:
        attributes |= _TRANSACTIONAL_BIT
    if control:
        attributes |= _CONTROL_BIT
    return attributes
