"""read_committed for direct reads of remote segments (KIP-98 over KIP-405), sans-IO.

A broker serves a read_committed fetch from remote storage with the aborted transactions
overlapping what it returns, collected from the ``.txnindex`` of the segment read and of each
later segment until an entry's lastStableOffset reaches the end of the read, then from its
local log (Kafka's ``RemoteLogManager.collectAbortedTransactions``); the consumer drops the
data batches of those transactions and every control batch (``records.aborted.AbortedFilter``).
A direct read does the same from the uploaded objects alone, so it must never need the local
log's index:

- **Where direct reads stop** (``stable_end``, on the driver): uploads never pass the last
  stable offset (``tiered.copy_rules``), so every transaction with data in remote storage is
  decided, but its marker may still be in the leader's local log (a transaction's data segments
  are uploaded once it ends, while its marker sits in the active segment). The producer snapshot
  uploaded with the newest readable segment (the state at its end) lists the transactions still
  open there (CurrentTxnFirstOffset); below the oldest one's first offset every transaction's
  marker is in remote storage, so its abort is in a remote ``.txnindex``. Above it, the brokers
  read.
- **What a piece drops** (``aborted_for``, on the executor): the entries of the ``.txnindex``
  objects from the piece's segment on that overlap the piece, until the search is complete
  (``storage.txn_index.collect_aborted``), in the form a Fetch answer lists them.
"""

from __future__ import annotations

from collections.abc import Iterable

from tierlog.storage.producer_snapshot_codec import SnapshotEntry
from tierlog.storage.txn_index import AbortedTxn, collect_aborted

__all__ = ["aborted_for", "stable_end"]


def stable_end(snapshot: Iterable[SnapshotEntry], end_offset: int) -> int:
    """The first offset of the oldest transaction still open after ``end_offset`` (the state the
    snapshot taken there holds), else ``end_offset + 1``: direct read_committed reads stop below it."""
    open_firsts = [e.current_txn_first_offset for e in snapshot if e.current_txn_first_offset >= 0]
    return min([end_offset + 1, *open_firsts])


def aborted_for(indexes: Iterable[list[AbortedTxn]], start: int, end: int) -> list[dict]:
    """The aborted transactions overlapping ``[start, end)`` as a Fetch answer's AbortedTransactions,
    from ``indexes`` (the ``.txnindex`` entries of the segment read and of each later one, in offset
    order; consumed only until an entry completes the search)."""
    found: dict[AbortedTxn, None] = {}
    for entries in indexes:
        more, complete = collect_aborted(entries, start, end)
        found.update(dict.fromkeys(more))
        if complete:
            break
    return [{"ProducerId": e.producer_id, "FirstOffset": e.first_offset} for e in found]
