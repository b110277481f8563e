"""Validate a records blob batch by batch, without decoding records.

Per batch: one ``unpack_from`` of the 61-byte header, bounds checks, one C-level
CRC-32C over attributes..end. Per-record loops never run here.

Errors (Kafka's codes, as its broker answers them):

- CORRUPT_MESSAGE: truncated batch or header, batchLength below the header size,
  unknown magic above 2, CRC mismatch.
- UNSUPPORTED_FOR_MESSAGE_FORMAT: magic 0 or 1 (Kafka 4 accepts only v2).
- UNSUPPORTED_COMPRESSION_TYPE: codec id above 4.
- INVALID_RECORD: negative lastOffsetDelta or recordsCount, more records than the
  payload can hold; with ``client=True`` also Kafka's client-origin checks
  (count == lastOffsetDelta + 1 and > 0, no control batches, a producer id needs a
  base sequence).
- MESSAGE_TOO_LARGE: a batch larger than ``max_batch_bytes`` (max.message.bytes).
"""

from __future__ import annotations

from typing import NamedTuple

from crc32c import crc32c

from tierlog.records.errors import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    MESSAGE_TOO_LARGE,
    UNSUPPORTED_COMPRESSION_TYPE,
    UNSUPPORTED_FOR_MESSAGE_FORMAT,
    InvalidRecordError,
)
from tierlog.records.header import (
    ATTRIBUTES_OFFSET,
    CODEC_MASK,
    CONTROL_BIT,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    BatchHeader,
)

__all__ = ["ValidatedRecords", "validate", "validate_batch"]

_MAX_CODEC = 4
_MIN_UNCOMPRESSED_RECORD = 7  # length, attributes, ts delta, offset delta, key, value, headers


class ValidatedRecords(NamedTuple):
    """What validation learned; offsets are relative to the blob's first offset."""

    positions: list[int]
    headers: list[BatchHeader]
    record_count: int  # sum of lastOffsetDelta + 1
    max_timestamp: int  # NO_TIMESTAMP (-1) when no batch has one
    max_timestamp_offset_delta: int  # last offset delta of the batch holding max_timestamp
    size: int  # total bytes, == len(buf)


def validate(buf: bytes | bytearray | memoryview, *, max_batch_bytes: int | None = None,
             client: bool = False) -> ValidatedRecords:
    """Walk every batch in ``buf``; raise ``InvalidRecordError`` on the first bad one."""
    positions: list[int] = []
    headers: list[BatchHeader] = []
    count = 0
    max_ts, max_ts_delta = NO_TIMESTAMP, -1
    pos, end = 0, len(buf)
    with memoryview(buf) as view:
        while pos < end:
            header = validate_batch(view, pos, max_batch_bytes, client)
            positions.append(pos)
            headers.append(header)
            if header.max_timestamp > max_ts:
                max_ts, max_ts_delta = header.max_timestamp, count + header.last_offset_delta
            count += header.last_offset_delta + 1
            pos += header.size
    return ValidatedRecords(positions, headers, count, max_ts, max_ts_delta, end)


def validate_batch(view: memoryview, pos: int, max_batch_bytes: int | None = None, client: bool = False) -> BatchHeader:
    """Validate the one batch at ``pos`` of ``view`` and return its header."""
    remaining = len(view) - pos
    if remaining > MAGIC_OFFSET and view[pos + MAGIC_OFFSET] != MAGIC_V2:
        _check_magic(view[pos + MAGIC_OFFSET], pos)
    if remaining < HEADER_SIZE:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"truncated batch header at position {pos}")
    header = BatchHeader._make(HEADER.unpack_from(view, pos))
    size = header.batch_length + LOG_OVERHEAD
    if size < HEADER_SIZE:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"batch length {header.batch_length} below the header size")
    if size > remaining:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"truncated batch at position {pos}: {size} > {remaining} bytes")
    if max_batch_bytes is not None and size > max_batch_bytes:
        raise InvalidRecordError(
            MESSAGE_TOO_LARGE, f"batch of {size} bytes exceeds max.message.bytes {max_batch_bytes}"
        )
    if crc32c(view[pos + ATTRIBUTES_OFFSET:pos + size]) != header.crc:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"CRC mismatch in batch at offset {header.base_offset}")
    # the checks below in one expression each for a good batch (most): their functions say which failed
    attributes, count, delta = header.attributes, header.records_count, header.last_offset_delta
    codec = attributes & CODEC_MASK
    if codec > _MAX_CODEC or delta < 0 or count < 0 or \
            (codec == 0 and count * _MIN_UNCOMPRESSED_RECORD > size - HEADER_SIZE):
        _check_counts(header, size)
    if client and (count <= 0 or count != delta + 1 or attributes & CONTROL_BIT
                   or (header.producer_id > NO_PRODUCER_ID and header.base_sequence < 0)):
        _check_client_batch(header)
    return header


def _check_magic(magic: int, pos: int) -> None:
    if magic == MAGIC_V2:
        return
    if magic in (0, 1):
        raise InvalidRecordError(
            UNSUPPORTED_FOR_MESSAGE_FORMAT, f"message format v{magic} is not supported, only v2"
        )
    raise InvalidRecordError(CORRUPT_MESSAGE, f"unknown magic {magic} at position {pos}")


def _check_counts(header: BatchHeader, size: int) -> None:
    if header.compression > _MAX_CODEC:
        raise InvalidRecordError(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec id {header.compression}")
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise InvalidRecordError(INVALID_RECORD, "negative lastOffsetDelta or recordsCount")
    if header.compression == 0 and header.records_count * _MIN_UNCOMPRESSED_RECORD > size - HEADER_SIZE:
        raise InvalidRecordError(
            INVALID_RECORD, f"recordsCount {header.records_count} cannot fit in {size - HEADER_SIZE} bytes"
        )


def _check_client_batch(header: BatchHeader) -> None:
    if header.records_count <= 0:
        raise InvalidRecordError(INVALID_RECORD, f"invalid reported count for record batch: {header.records_count}")
    if header.records_count != header.last_offset_delta + 1:
        raise InvalidRecordError(
            INVALID_RECORD,
            f"inconsistent batch offset range: lastOffsetDelta {header.last_offset_delta} "
            f"and count of records {header.records_count}",
        )
    if header.is_control:
        raise InvalidRecordError(INVALID_RECORD, "clients are not allowed to write control records")
    if header.has_producer_id and header.base_sequence < 0:
        raise InvalidRecordError(
            INVALID_RECORD, f"invalid sequence number {header.base_sequence} with producerId {header.producer_id}"
        )
