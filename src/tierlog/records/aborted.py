"""Which fetched batches a read_committed reader leaves out: the data of aborted transactions.

Kafka's consumer rule (KIP-98; ``CompletedFetch.nextFetchedBatch``): a read_committed
Fetch answer lists the aborted transactions overlapping the records it carries
(AbortedTransactions: producer id and first offset). Walking the batches in offset
order, an aborted transaction becomes active for its producer once a batch of that
producer reaches its first offset; while active, that producer's transactional
data batches are dropped; its ABORT marker ends it. Control batches (the markers)
are never data. Sans-IO: headers and bytes in, a decision out.
"""

from __future__ import annotations

import heapq
from typing import Any

from tierlog.records.control import ABORT, read_marker
from tierlog.records.header import BatchHeader

__all__ = ["READ_COMMITTED", "READ_UNCOMMITTED", "AbortedFilter"]

READ_UNCOMMITTED, READ_COMMITTED = 0, 1      # Fetch's and ListOffsets' IsolationLevel


class AbortedFilter:
    """The aborted transactions of one Fetch answer, consumed as its batches go by."""

    __slots__ = ("_active", "_pending")

    def __init__(self, aborted: list[dict[str, Any]] | None) -> None:
        self._pending = [(t["FirstOffset"], t["ProducerId"]) for t in aborted or ()]
        heapq.heapify(self._pending)
        self._active: set[int] = set()

    def drops(self, header: BatchHeader, batch: memoryview) -> bool:
        """True when the batch (``batch`` spans exactly it) is data of an aborted transaction."""
        if header.producer_id < 0:
            return False
        last_offset = header.base_offset + header.last_offset_delta
        while self._pending and self._pending[0][0] <= last_offset:
            self._active.add(heapq.heappop(self._pending)[1])
        if header.is_control:
            if header.producer_id in self._active and read_marker(batch, header)[0] == ABORT:
                self._active.discard(header.producer_id)
            return False
        return header.is_transactional and header.producer_id in self._active
