"""Decode batches into ``Record``s, all five codecs (tools, clients and tests).

For a LogAppendTime batch every record's timestamp is the batch maxTimestamp, as
Kafka's ``DefaultRecordBatch`` reports it.
"""

from __future__ import annotations

from collections.abc import Iterator

from tierlog.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress
from tierlog.records.errors import CORRUPT_MESSAGE, InvalidRecordError
from tierlog.records.header import (
    HEADER_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    BatchHeader,
    TimestampType,
)
from tierlog.records.record import Record, decode_record
from tierlog.records.validate import validate_batch

__all__ = ["decode_batches", "decode_records", "iter_batches"]


def iter_batches(buf: bytes | bytearray | memoryview, *, partial_ok: bool = False) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each CRC-checked batch in ``buf``.

    ``partial_ok`` stops quietly at a truncated trailing batch, as consumers do with
    fetch responses cut at the size limit.
    """
    view = memoryview(buf)
    pos = 0
    while pos < len(view):
        if partial_ok and _is_partial(view, pos):
            return
        header = validate_batch(view, pos)
        yield pos, header
        pos += header.size


def decode_batches(
    buf: bytes | bytearray | memoryview, *, partial_ok: bool = False, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Yield (header, records) for each batch in ``buf``."""
    view = memoryview(buf)
    for pos, header in iter_batches(view, partial_ok=partial_ok):
        yield header, decode_records(view[pos:pos + header.size], header, max_size)


def decode_records(batch: bytes | bytearray | memoryview, header: BatchHeader,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> list[Record]:
    """Decode the records of one batch (``batch`` spans exactly that batch)."""
    payload = decompress(header.compression, batch[HEADER_SIZE:header.size], max_size)
    log_append_time = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    records = []
    pos = 0
    for _ in range(header.records_count):
        record, _delta, pos = decode_record(payload, pos, header.base_offset, header.base_timestamp)
        if log_append_time:
            record = record._replace(timestamp=header.max_timestamp)
        records.append(record)
    if pos != len(payload):
        raise InvalidRecordError(
            CORRUPT_MESSAGE, f"batch at offset {header.base_offset} holds more than its {header.records_count} records"
        )
    return records


def _is_partial(view: memoryview, pos: int) -> bool:
    remaining = len(view) - pos
    if remaining < HEADER_SIZE:
        return True
    length = int.from_bytes(view[pos + LENGTH_OFFSET:pos + LENGTH_OFFSET + 4], "big", signed=True)
    return length + LOG_OVERHEAD > remaining
