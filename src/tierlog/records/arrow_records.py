"""Record batches (v2) straight into Arrow columns, with little per-record Python.

A fetch answer holds whole record batches. Per fetch:

1. Walk the batch headers (CRC-32C checked in C); control batches, records
   outside ``[start, end)`` and, for a read_committed reader, the batches of
   aborted transactions (``records.aborted.AbortedFilter``) are left out; compressed payloads are decompressed
   in C. Uncompressed records stay in the fetch answer's buffer; decompressed
   payloads are joined into one buffer.
2. ``records.record_bounds`` finds where each record starts and ends (each is
   led by its length): with numpy for batches of records of one size and for
   many batches in lockstep, else one tight Python loop per record.
3. Every other field (timestamp delta, offset delta, key and value lengths,
   header counts) is decoded for all records at once with numpy
   (vectorised varints). Offsets and timestamps come from the batch headers
   plus those deltas; LogAppendTime batches take the batch maxTimestamp.
4. Keys and values become Arrow ``binary_view`` arrays pointing into the
   buffer (16-byte views built with numpy) and are cast to ``binary``
   in C++: no Python object per record.

Headers, when asked for, are parsed in Python for the records that have any.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pyarrow as pa
from numpy.lib.stride_tricks import sliding_window_view

from tierlog.records import (
    HEADER_SIZE,
    InvalidRecordError,
    validate_batch,
)
from tierlog.records.compression import decompress
from tierlog.records.errors import CORRUPT_MESSAGE
from tierlog.records.header import LENGTH_OFFSET, LOG_OVERHEAD, BatchHeader
from tierlog.records.record import read_varint
from tierlog.records.record_bounds import record_bounds, varints

__all__ = ["HEADERS_TYPE", "BatchFilter", "KAFKA_SCHEMA", "KAFKA_SCHEMA_WITH_HEADERS", "DecodedChunk", "decode_fetched"]

HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
_FIELDS = [
    pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32()),
]
KAFKA_SCHEMA = pa.schema(_FIELDS)
KAFKA_SCHEMA_WITH_HEADERS = pa.schema([*_FIELDS, pa.field("headers", HEADERS_TYPE)])
_ARANGE12 = np.arange(12)
_CONTROL_BIT = 0x20
_LOG_APPEND_TIME_BIT = 0x08


class BatchFilter(Protocol):
    """Which data batches a reader leaves out (``records.aborted.AbortedFilter`` for a Fetch answer,
    the ``.txnindex`` rule of ``tiered.table.rows`` for a segment); asked in offset order."""

    def drops(self, header: BatchHeader, batch: memoryview) -> bool: ...


class DecodedChunk:
    """What one fetch answer gave: an Arrow batch (or None) and where to fetch next."""

    __slots__ = ("batch", "bytes", "next_offset")

    def __init__(self, batch: pa.RecordBatch | None, next_offset: int, nbytes: int):
        self.batch = batch
        self.next_offset = next_offset  # exclusive: the offset after the last whole batch seen
        self.bytes = nbytes


def decode_fetched(records: Any, topic: str, partition: int, start: int, end: int,
                   include_headers: bool = False, aborted: BatchFilter | None = None) -> DecodedChunk:
    """Decode the whole batches in ``records`` (a fetch answer's Records field).

    Keeps records with ``start <= offset < end``, without the batches ``aborted`` drops
    (read_committed; control batches are never data). A truncated trailing batch (the fetch size limit cut it) is left
    for the next fetch.
    """
    view = memoryview(records) if records is not None else memoryview(b"")
    payloads: list[bytes | tuple[int, int]] = []    # decompressed, or (start, end) in the fetched view
    base_offsets, counts, base_ts, max_ts, log_append = [], [], [], [], []
    pos, next_offset, nbytes, compressed = 0, start, 0, False
    while len(view) - pos >= HEADER_SIZE:
        length = int.from_bytes(view[pos + LENGTH_OFFSET:pos + LENGTH_OFFSET + 4], "big", signed=True)
        if length + LOG_OVERHEAD > len(view) - pos:
            break                                   # partial batch at the end
        header = validate_batch(view, pos)          # CRC-32C and header sanity
        size = header.size
        batch_end = header.base_offset + header.last_offset_delta + 1
        if header.base_offset >= end:
            break
        dropped = aborted is not None and aborted.drops(header, view[pos:pos + size])
        if batch_end > start and not header.attributes & _CONTROL_BIT and header.records_count > 0 and not dropped:
            if header.compression:
                compressed = True
                payloads.append(decompress(header.compression, view[pos + HEADER_SIZE:pos + size]))
            else:
                payloads.append((pos + HEADER_SIZE, pos + size))
            base_offsets.append(header.base_offset)
            counts.append(header.records_count)
            base_ts.append(header.base_timestamp)
            max_ts.append(header.max_timestamp)
            log_append.append(bool(header.attributes & _LOG_APPEND_TIME_BIT))
            nbytes += size
        next_offset = max(next_offset, batch_end)
        pos += size
    if not payloads:
        return DecodedChunk(None, next_offset, 0)
    if compressed:                          # decompressed payloads joined into one buffer
        parts = [view[p[0]:p[1]] if isinstance(p, tuple) else p for p in payloads]
        buf: bytes | memoryview = b"".join(parts)
        spans, at = [], 0
        for part, count in zip(parts, counts):
            spans.append((at, at + len(part), count))
            at += len(part)
    else:                                   # records stay where the fetch answer put them
        buf = view
        spans = [(a, b, count) for (a, b), count in zip(payloads, counts)]
    batch = _to_arrow(buf, spans, base_offsets, counts, base_ts, max_ts, log_append,
                      topic, partition, start, end, include_headers)
    return DecodedChunk(batch, next_offset, nbytes)


def _to_arrow(buf: Any, spans: list[tuple[int, int, int]], base_offsets: list[int], counts: list[int],
              base_ts: list[int], max_ts: list[int], log_append: list[bool], topic: str, partition: int,
              start: int, end: int, include_headers: bool) -> pa.RecordBatch | None:
    starts, ends = record_bounds(buf, spans)
    raw = np.frombuffer(buf, dtype=np.uint8)
    counts_np = np.asarray(counts, dtype=np.int64)
    p = starts + 1                                       # skip attributes (int8)
    ts_delta, p = varints(raw, p)
    off_delta, p = varints(raw, p)
    key_len, p = varints(raw, p)
    key_start = p
    p = p + np.maximum(key_len, 0)
    value_len, p = varints(raw, p)
    value_start = p
    p = p + np.maximum(value_len, 0)
    if np.any(p > ends):
        raise InvalidRecordError(CORRUPT_MESSAGE, f"a record of {topic}-{partition} runs past its length")
    offsets = np.repeat(np.asarray(base_offsets, dtype=np.int64), counts_np) + off_delta
    timestamps = np.repeat(np.asarray(base_ts, dtype=np.int64), counts_np) + ts_delta
    if any(log_append):
        timestamps = np.where(np.repeat(np.asarray(log_append), counts_np),
                              np.repeat(np.asarray(max_ts, dtype=np.int64), counts_np), timestamps)
    ts_type = np.repeat(np.asarray(log_append, dtype=np.int32), counts_np)
    lo, hi = np.searchsorted(offsets, [start, end])     # offsets increase within a partition
    if lo >= hi:
        return None
    sl = slice(lo, hi)
    n = hi - lo
    data = pa.py_buffer(buf)
    columns = [
        _binary(data, raw, key_start[sl], key_len[sl]),
        _binary(data, raw, value_start[sl], value_len[sl]),
        _constant_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(offsets[sl]),
        pa.array(timestamps[sl] * 1000, type=pa.timestamp("us", tz="UTC")),
        pa.array(ts_type[sl]),
    ]
    if include_headers:
        columns.append(_headers(buf, raw, p[sl], ends[sl]))
        return pa.RecordBatch.from_arrays(columns, schema=KAFKA_SCHEMA_WITH_HEADERS)
    return pa.RecordBatch.from_arrays(columns, schema=KAFKA_SCHEMA)


def _binary(data: pa.Buffer, raw: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """A ``binary`` column of slices of ``data`` (length -1 = null), via binary_view. A column
    of nulls only (a topic without keys) is built without views."""
    n = len(starts)
    valid = lengths >= 0
    null_count = n - int(np.count_nonzero(valid))
    if null_count == n:
        return pa.nulls(n, pa.binary())
    lens = np.where(valid, lengths, 0).astype(np.int32)
    views = np.zeros((n, 16), dtype=np.uint8)
    views[:, 0:4] = lens.view(np.uint8).reshape(n, 4)
    long = lens > 12
    if long.all():
        _long_views(views, raw, starts, slice(None))
    else:
        _long_views(views, raw, starts[long], np.flatnonzero(long))
        _inline_views(views, raw, starts, lens, np.flatnonzero((lens > 0) & ~long))
    validity = None if null_count == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), data], null_count=null_count)
    return arr.cast(pa.binary())


def _long_views(views: np.ndarray, raw: np.ndarray, starts: np.ndarray, rows: Any) -> None:
    """Views of values over 12 bytes: their 4-byte prefix, buffer index 0 (bytes 8..12 stay
    zero) and their offset into the data buffer; a byte column at a time (no 2-D gather)."""
    for k in range(4):
        views[rows, 4 + k] = raw[starts + k]
    views[rows, 12:16] = starts.astype(np.int32).view(np.uint8).reshape(-1, 4)


def _inline_views(views: np.ndarray, raw: np.ndarray, starts: np.ndarray, lens: np.ndarray, rows: np.ndarray) -> None:
    """Views of values of 1 to 12 bytes: the bytes themselves, zero-padded. The 12 bytes from
    each start are rows of a sliding window over the buffer (no index arithmetic per byte);
    a start within 12 bytes of the buffer's end takes the clipped gather."""
    if not rows.size:
        return
    first = starts[rows]
    if len(raw) >= 12 and first.max() <= len(raw) - 12:
        inline = sliding_window_view(raw, 12)[first]
    else:
        inline = raw[np.minimum(first[:, None] + _ARANGE12, len(raw) - 1)]
    inline *= _ARANGE12[None, :] < lens[rows][:, None]
    views[rows, 4:16] = inline


def _constant_string(text: str, n: int) -> pa.Array:
    encoded = text.encode("utf-8")
    offsets = (np.arange(n + 1, dtype=np.int32) * len(encoded)).view(np.uint8)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * n)])


def _headers(buf: Any, raw: np.ndarray, positions: np.ndarray, ends: np.ndarray) -> pa.Array:
    """Headers per record (null when a record has none), parsed in Python only where present."""
    count, p = varints(raw, positions.copy())
    out: list[Any] = [None] * len(positions)
    for i in np.flatnonzero(count > 0).tolist():
        out[i] = _parse_headers(buf, int(p[i]), int(count[i]), int(ends[i]))
    return pa.array(out, type=HEADERS_TYPE)


def _parse_headers(buf: Any, pos: int, count: int, end: int) -> list[dict[str, Any]]:
    headers = []
    for _ in range(count):
        klen, pos = read_varint(buf, pos)
        if klen < 0 or pos + klen > end:
            raise InvalidRecordError(CORRUPT_MESSAGE, f"invalid header key length {klen}")
        key = bytes(buf[pos:pos + klen]).decode("utf-8", errors="replace")
        pos += klen
        vlen, pos = read_varint(buf, pos)
        if vlen < -1 or pos + vlen > end:
            raise InvalidRecordError(CORRUPT_MESSAGE, f"invalid header value length {vlen}")
        value = None if vlen < 0 else bytes(buf[pos:pos + vlen])
        pos += max(vlen, 0)
        headers.append({"key": key, "value": value})
    return headers
