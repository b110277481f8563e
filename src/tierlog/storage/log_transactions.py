"""The transaction side of :class:`~tierlog.storage.log.Log` (KIP-98): the queries of its
producer state and aborted-transaction index, and their rebuild on open.

A mixin over the log's own state (``_lock``, ``_producers``, ``_txn_index``, ``_snapshots``,
``_segments``, ``_bases``), like ``log_durability``; ``Log`` is the one class that uses it.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from tierlog.storage.log_read import segment_index
from tierlog.storage.producer_snapshot_files import replay_source
from tierlog.storage.producer_state import CompletedTxn
from tierlog.storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from tierlog.storage.producer_snapshot_files import ProducerSnapshots
    from tierlog.storage.producer_state import ProducerStateManager
    from tierlog.storage.segment import LogSegment
    from tierlog.storage.txn_index import TransactionIndexes

__all__ = ["LogTransactions"]


class LogTransactions:
    # The state of ``Log`` this mixin works on, declared for the type checker.
    _lock: threading.RLock
    _producers: ProducerStateManager
    _snapshots: ProducerSnapshots
    _txn_index: TransactionIndexes
    _segments: list[LogSegment]
    _bases: list[int]

    if TYPE_CHECKING:
        @property
        def log_end_offset(self) -> int: ...

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the oldest transaction undecided below ``high_watermark``."""
        with self._lock:
            return self._producers.first_unstable_offset(high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions a read_committed read of [fetch_offset, upper_bound) must skip."""
        with self._lock:
            return self._txn_index.aborted_between(fetch_offset, upper_bound)

    def transaction_index_file(self, segment_base: int):
        """The ``.txnindex`` file of the segment at ``segment_base``, None when it has no entry."""
        with self._lock:
            return self._txn_index.file_for(segment_base)

    def active_producers(self) -> list:
        """The producer state's producers (``producer_state.ActiveProducer``)."""
        with self._lock:
            return self._producers.active()

    def open_transaction_epoch(self, producer_id: int) -> int | None:
        """The producer's epoch if it has an open transaction here, else None."""
        with self._lock:
            return self._producers.open_txn_epoch(producer_id)

    def ongoing_transactions(self) -> dict[int, tuple[int, int]]:
        """Producer id -> (epoch, first offset) of each open transaction."""
        with self._lock:
            return self._producers.ongoing()

    def _rebuild_producers(self) -> None:
        """Idempotent producer state (``producer_snapshot_files.replay_source`` says from what)."""
        headers, entries, start, markers, history = replay_source(self._snapshots, self._segments, self._bases,
                                                                  self.log_end_offset)
        self._txn_index.truncate_to(start)       # the replay indexes the aborts from ``start`` again
        self._index_aborted(self._producers.rebuild(headers, entries, markers, history))

    def _index_aborted(self, ended: list[CompletedTxn]) -> None:
        """KIP-98: an ABORT marker of a non-empty transaction goes into the ``.txnindex`` of the
        segment holding it, with the oldest other open transaction as its lastStableOffset.  A
        transaction ended by a later marker of the same write counts as open (Kafka completes them
        one by one: ``lastStableOffset(completedTxn)``, then ``completeTxn``)."""
        for i, txn in enumerate(ended):
            if txn.aborted:
                others = [t.first_offset for t in ended[i + 1:] if t.producer_id != txn.producer_id]
                open_first = self._producers.open_txn_first_offset(txn.producer_id)
                others += [] if open_first is None else [open_first]
                lso = min(others) if others else txn.last_offset + 1
                base = self._bases[segment_index(self._bases, txn.last_offset)]
                self._txn_index.append(base, AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
