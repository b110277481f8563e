"""Rewrite a v2 batch keeping some of its records (Kafka's ``MemoryRecords.filterTo``
output side, used by the log cleaner).

A rewritten batch keeps the original's base offset and last offset delta (so the
producer's last sequence survives: Kafka's ``overrideLastOffset``), its producer
id, epoch and base sequence, partition leader epoch, codec, timestamp type and the
transactional / control bits. Its records keep their offsets and timestamps; the
CRC is computed anew.

Delete horizon (KIP-534): when ``delete_horizon_ms`` is given, attribute bit 6 is
set and baseTimestamp holds the horizon instead of the first record's timestamp;
record timestamp deltas are taken from it, so record timestamps are unchanged.
maxTimestamp is the largest kept record timestamp (for LogAppendTime batches the
original maxTimestamp, which is every record's timestamp).

An empty batch (``empty_batch``) is Kafka's ``writeEmptyHeader``: the header only,
no records, codec none, baseTimestamp -1, maxTimestamp the original's: it keeps an
idempotent producer's last offset and sequence in the log after all its records
were cleaned away.
"""

from __future__ import annotations

from collections.abc import Sequence

from tierlog.records.compression import compress
from tierlog.records.header import (
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_TIMESTAMP,
    BatchHeader,
    TimestampType,
)
from tierlog.records.record import Record, encode_record
from tierlog.records.stamp import compute_crc

__all__ = ["DELETE_HORIZON_BIT", "empty_batch", "filtered_batch"]

DELETE_HORIZON_BIT = 0x40
_CODEC_MASK = 0x07


def filtered_batch(original: BatchHeader, records: Sequence[Record], delete_horizon_ms: int = NO_TIMESTAMP) -> bytes:
    """The batch ``original`` holding only ``records`` (non-empty, offsets increasing)."""
    if not records:
        raise ValueError("a filtered batch keeps at least one record; use empty_batch")
    horizon = delete_horizon_ms != NO_TIMESTAMP
    base_timestamp = delete_horizon_ms if horizon else records[0].timestamp
    payload = bytearray()
    for record in records:
        encode_record(payload, record, record.offset - original.base_offset, record.timestamp - base_timestamp)
    body = compress(original.compression, bytes(payload))
    attributes = original.attributes & ~DELETE_HORIZON_BIT
    if horizon:
        attributes |= DELETE_HORIZON_BIT
    if original.timestamp_type == TimestampType.LOG_APPEND_TIME:
        max_timestamp = original.max_timestamp
    else:
        max_timestamp = max(record.timestamp for record in records)
    return _pack(original, attributes, base_timestamp, max_timestamp, len(records), body)


def empty_batch(original: BatchHeader) -> bytes:
    """Header-only batch with ``original``'s offsets and producer fields, no records."""
    attributes = original.attributes & ~(DELETE_HORIZON_BIT | _CODEC_MASK)
    return _pack(original, attributes, NO_TIMESTAMP, original.max_timestamp, 0, b"")


def _pack(original: BatchHeader, attributes: int, base_timestamp: int, max_timestamp: int, count: int,
          body: bytes) -> bytes:
    out = bytearray(HEADER_SIZE)
    HEADER.pack_into(
        out, 0,
        original.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(body), original.partition_leader_epoch, MAGIC_V2, 0,
        attributes, original.last_offset_delta, base_timestamp, max_timestamp, original.producer_id,
        original.producer_epoch, original.base_sequence, count,
    )
    out += body
    out[CRC_OFFSET:CRC_OFFSET + 4] = compute_crc(out).to_bytes(4, "big")
    return bytes(out)
