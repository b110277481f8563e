"""The committed records of one segment, as a read_committed consumer sees them (sans-IO).

Control batches (transaction markers) are never rows. A transactional data batch
is left out when its producer has an aborted transaction spanning it: Kafka's
``.txnindex`` entry (producer id, first offset, last offset = the ABORT marker)
says the producer's transactional batches in [first offset, marker] are aborted
(a producer has one transaction open at a time, so the range is exact; KIP-98).
The aborted transactions come from the local log's transaction index
(``Log.aborted_transactions`` over the segment's range): the ABORT marker of a
transaction whose data is in this segment may be in a later one, and uploads
never pass the last stable offset, so it is written by the time the segment is
uploaded.

Only offsets in [start_offset, end_offset] are rows: a segment a new leader
uploads whole may begin below where uploads stopped (copy_task), and the table
holds each offset once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tierlog.records import decode_records, iter_batches
from tierlog.records.header import BatchHeader
from tierlog.storage.txn_index import AbortedTxn

__all__ = ["SegmentRecord", "committed_records"]


@dataclass(frozen=True, slots=True)
class SegmentRecord:
    offset: int
    timestamp: int                  # ms since the epoch, as the consumer sees it (LogAppendTime applied)
    timestamp_type: int             # Kafka's TimestampType id: 0 CreateTime, 1 LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def committed_records(data: bytes | bytearray | memoryview, start_offset: int, end_offset: int,
                      aborted: Sequence[AbortedTxn]) -> Iterator[SegmentRecord]:
    """The committed data records of the segment bytes ``data`` in [start_offset, end_offset] (inclusive)."""
    by_producer: dict[int, list[AbortedTxn]] = {}
    for txn in aborted:
        by_producer.setdefault(txn.producer_id, []).append(txn)
    view = memoryview(data)
    for pos, header in iter_batches(view):
        if header.base_offset > end_offset:
            return
        last = header.base_offset + header.last_offset_delta
        if last < start_offset or header.is_control or _aborted(header, by_producer):
            continue
        ts_type = int(header.timestamp_type)
        for r in decode_records(view[pos:pos + header.size], header):
            if start_offset <= r.offset <= end_offset:
                yield SegmentRecord(r.offset, r.timestamp, ts_type, r.key, r.value, list(r.headers))


def _aborted(header: BatchHeader, by_producer: dict[int, list[AbortedTxn]]) -> bool:
    if not header.is_transactional:
        return False
    return any(t.first_offset <= header.base_offset <= t.last_offset for t in by_producer.get(header.producer_id, ()))
