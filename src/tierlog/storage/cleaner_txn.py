"""What the log cleaner does with transactions (Kafka's ``CleanedTransactionMetadata``), sans-IO.

The cleaner walks a group of segments batch by batch, in offset order, and asks this class
about each one. It is told first which aborted transactions overlap each segment it reads
(``add_aborted``: the log's ``.txnindex`` entries, from ``aborted_overlapping``); an aborted
transaction becomes *ongoing* once the walk reaches its first offset.

- A transactional data batch of a producer with an ongoing aborted transaction is aborted
  data: discarded (``on_batch`` True), and its transaction marked as having had data here.
  Another producer's transactional batch opens an ongoing committed transaction.
- An ABORT marker ends the producer's ongoing aborted transaction. If some of its data was
  seen in this walk, the marker is kept (its data goes in this clean, the marker at a later
  one) and its ``.txnindex`` entry is kept for the cleaned segment (``retained``); otherwise
  the marker may go (``on_marker`` True).
- A COMMIT marker may go when no batch of its transaction was seen in this walk.
- A control batch with no record (cleaned empty before) may go.

A marker that may go is not dropped at once: it first gets a delete horizon of now +
``delete.retention.ms`` (KIP-534, as tombstones do) and is dropped by the first clean after
that (``cleaner_rules.filter_batch``), so a consumer that read the data has that long to read
the marker too. The cleaner never reads at or above the last stable offset, so every
transaction it sees here is decided and its marker written.

Transitions per producer: none -> ongoing aborted (its first offset reached) -> ended (ABORT
marker); none -> ongoing committed (a transactional batch with no aborted transaction) ->
ended (COMMIT marker).
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable

from tierlog.records.control import ABORT, COMMIT
from tierlog.records.header import BatchHeader
from tierlog.storage.txn_index import AbortedTxn

__all__ = ["CleanedTransactions", "aborted_overlapping"]


def aborted_overlapping(entries: Iterable[AbortedTxn], start: int, end: int) -> list[AbortedTxn]:
    """The aborted transactions with an offset in [start, end) (their data or their marker)."""
    return [e for e in entries if e.last_offset >= start and e.first_offset < end]


class _Ongoing:
    __slots__ = ("entry", "seen_data")

    def __init__(self, entry: AbortedTxn) -> None:
        self.entry = entry
        self.seen_data = False


class CleanedTransactions:
    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []      # heap by first offset
        self._known: set[AbortedTxn] = set()
        self._aborted: dict[int, _Ongoing] = {}                    # producer id -> ongoing aborted
        self._committed: set[int] = set()                          # producers with ongoing committed data
        self.retained: list[AbortedTxn] = []                       # entries for the cleaned .txnindex

    def add_aborted(self, entries: Iterable[AbortedTxn]) -> None:
        for e in entries:
            if e not in self._known:
                self._known.add(e)
                heapq.heappush(self._pending, (e.first_offset, e.last_offset, e))

    def _reach(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            entry = heapq.heappop(self._pending)[2]
            self._aborted.setdefault(entry.producer_id, _Ongoing(entry))

    def on_batch(self, header: BatchHeader) -> bool:
        """A data batch read; True: it is aborted data, to discard."""
        self._reach(header.last_offset)
        if not header.is_transactional:
            return False
        ongoing = self._aborted.get(header.producer_id)
        if ongoing is None:
            self._committed.add(header.producer_id)
            return False
        ongoing.seen_data = True
        return True

    def on_marker(self, header: BatchHeader, control_type: int | None) -> bool:
        """A control batch read (``control_type`` None: it has no record); True: it may go."""
        self._reach(header.last_offset)
        if control_type is None:
            return True
        if control_type == ABORT:
            ongoing = self._aborted.pop(header.producer_id, None)
            if ongoing is not None and ongoing.seen_data:
                self.retained.append(ongoing.entry)
                return False
            return True
        if control_type == COMMIT:
            seen = header.producer_id in self._committed
            self._committed.discard(header.producer_id)
            return not seen
        return False
