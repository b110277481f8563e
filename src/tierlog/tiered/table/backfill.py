"""Which remote segments a table still lacks, oldest first (sans-IO; docs/tables.md, "Backfill").

When ``tierlog.table.mode`` is turned on for a topic that has remote segments already
(or turned back on after being off), the leader commits those segments to the table
before any new upload: the table covers a partition's offsets without a hole from the
first segment it holds. The segments due are the finished ones of the leader's epoch
lineage that end above what the table covers, oldest first (overlapping copies are
harmless: the writer keeps only offsets above what is covered).
"""

from __future__ import annotations

from collections.abc import Sequence

from tierlog.storage.txn_index import AbortedTxn, decode_entries
from tierlog.tiered.lineage import within_leader_epochs
from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata

__all__ = ["BACKFILL_SEGMENTS_PER_PASS", "aborted_in", "backfill_due"]

BACKFILL_SEGMENTS_PER_PASS = 8      # then the pass ends (the next one goes on): a leader change is noticed


def backfill_due(finished: Sequence[RemoteLogSegmentMetadata], covered: int, epoch_entries: Sequence[tuple[int, int]],
                 log_end_offset: int) -> list[RemoteLogSegmentMetadata]:
    """The finished segments of the lineage ending above ``covered`` (the table's last offset), oldest first."""
    due = [m for m in finished if m.end_offset > covered and within_leader_epochs(m, epoch_entries, log_end_offset)]
    return sorted(due, key=lambda m: (m.start_offset, m.end_offset))


def aborted_in(txn_indexes: Sequence[bytes], local: Sequence[AbortedTxn]) -> list[AbortedTxn]:
    """The aborted transactions of the remote ``.txnindex`` objects given (a segment's and every later
    one's: a marker may follow its data by segments) and of the local log, each once."""
    seen: dict[AbortedTxn, None] = {}
    for data in txn_indexes:
        seen.update((t, None) for t in decode_entries(data))
    seen.update((t, None) for t in local)
    return list(seen)
