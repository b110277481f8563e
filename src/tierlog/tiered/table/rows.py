"""The committed records of one segment, as a read_committed consumer sees them, as Arrow batches.

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

The records are decoded by the vectorised decoder (``records.arrow_records``), a
chunk of whole batches of at most ``CHUNK_BYTES`` at a time (one batch larger than
that is a chunk of its own), so memory stays bounded whatever the segment size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from tierlog.records.arrow_records import decode_fetched
from tierlog.records.header import LENGTH_OFFSET, LOG_OVERHEAD, BatchHeader
from tierlog.storage.txn_index import AbortedTxn

__all__ = ["CHUNK_BYTES", "TxnIndexFilter", "committed_batches"]

CHUNK_BYTES = 8 << 20       # batch bytes decoded at once


class TxnIndexFilter:
    """The segment's aborted transactions (``.txnindex`` entries), as the decoder's batch filter."""

    __slots__ = ("_by_producer",)

    def __init__(self, aborted: Sequence[AbortedTxn]) -> None:
        self._by_producer: dict[int, list[AbortedTxn]] = {}
        for txn in aborted:
            self._by_producer.setdefault(txn.producer_id, []).append(txn)

    def drops(self, header: BatchHeader, batch: memoryview) -> bool:
        if not header.is_transactional:
            return False
        return any(t.first_offset <= header.base_offset <= t.last_offset
                   for t in self._by_producer.get(header.producer_id, ()))


def committed_batches(data: bytes | bytearray | memoryview, topic: str, partition: int, start_offset: int,
                      end_offset: int, aborted: Sequence[AbortedTxn]) -> Iterator[pa.RecordBatch]:
    """The committed data records of the segment bytes ``data`` in [start_offset, end_offset] (inclusive),
    in ``records.arrow_records.KAFKA_SCHEMA_WITH_HEADERS`` batches."""
    view = memoryview(data)
    txns = TxnIndexFilter(aborted)
    for lo, hi in _chunks(view, end_offset):
        chunk = decode_fetched(view[lo:hi], topic, partition, start_offset, end_offset + 1,
                               include_headers=True, aborted=txns)
        if chunk.batch is not None:
            yield chunk.batch


def _chunks(view: memoryview, end_offset: int) -> Iterator[tuple[int, int]]:
    """[lo, hi) of runs of whole batches of at most CHUNK_BYTES (batches above ``end_offset`` left out)."""
    lo = pos = 0
    while len(view) - pos >= LOG_OVERHEAD:
        if int.from_bytes(view[pos:pos + 8], "big", signed=True) > end_offset:
            break
        size = LOG_OVERHEAD + int.from_bytes(view[pos + LENGTH_OFFSET:pos + LENGTH_OFFSET + 4], "big", signed=True)
        if size <= LOG_OVERHEAD:        # a corrupt length: the decoder's header check names it
            yield lo, len(view)
            return
        if pos > lo and pos + size - lo > CHUNK_BYTES:
            yield lo, pos
            lo = pos
        pos += size
    if pos > lo:
        yield lo, min(pos, len(view))
