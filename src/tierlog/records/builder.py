"""Build one v2 record batch from ``Record``s (tools, clients and tests; not the broker)."""

from __future__ import annotations

from collections.abc import Sequence

from tierlog.records.compression import CompressionType, compress
from tierlog.records.header import (
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    TimestampType,
    attributes_for,
)
from tierlog.records.record import Record, encode_record
from tierlog.records.stamp import compute_crc

__all__ = ["build_batch"]


def build_batch(
    records: Sequence[Record],
    base_offset: int = 0,
    compression: int = CompressionType.NONE,
    timestamp_type: int = TimestampType.CREATE_TIME,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    *,
    transactional: bool = False,
    control: bool = False,
    compression_level: int | None = None,
) -> bytes:
    """Encode ``records`` as one batch.

    Each record's offset delta is ``record.offset - base_offset`` (strictly increasing,
    so compacted-style gaps are allowed); baseTimestamp is the first record's timestamp
    and maxTimestamp the largest, as Kafka's ``MemoryRecordsBuilder`` writes them.
    """
    if not records:
        raise ValueError("a batch needs at least one record")
    base_timestamp = records[0].timestamp
    payload = _encode_records(records, base_offset, base_timestamp)
    body = compress(compression, payload, compression_level)
    attributes = attributes_for(compression, timestamp_type, transactional, control)
    out = bytearray(HEADER_SIZE)
    HEADER.pack_into(
        out, 0,
        base_offset, HEADER_SIZE - LOG_OVERHEAD + len(body), partition_leader_epoch, MAGIC_V2, 0,
        attributes, records[-1].offset - base_offset, base_timestamp,
        max(r.timestamp for r in records), producer_id, producer_epoch, base_sequence, len(records),
    )
    out += body
    out[CRC_OFFSET:CRC_OFFSET + 4] = compute_crc(out).to_bytes(4, "big")
    return bytes(out)


def _encode_records(records: Sequence[Record], base_offset: int, base_timestamp: int) -> bytearray:
    out = bytearray()
    previous = -1
    for record in records:
        delta = record.offset - base_offset
        if delta <= previous:
            raise ValueError(f"record offsets must increase from base_offset {base_offset}: {record.offset}")
        encode_record(out, record, delta, record.timestamp - base_timestamp)
        previous = delta
    return out
