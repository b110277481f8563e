"""Backfill: a table topic's remote segments uploaded before its table was on, committed oldest first.

Run by the leader's copy pass before it uploads anything (``copy_task.copy_pass``):
the table's covered offset for the partition is read from the catalog, the finished
segments above it (``tiered.table.backfill.backfill_due``) are downloaded into
``<log dir>/table-staging`` in ranges of ``FETCH_BYTES`` and committed by the same
writer as uploads, at most ``BACKFILL_SEGMENTS_PER_PASS`` per pass. Until the table
covers every remote segment, the pass uploads nothing (an upload committed ahead of
the backfill would leave a hole the backfill then skips). Progress: the
``tierlog_table_lag_offsets`` metric (the tiered offset minus the covered one).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from tierlog.tiered import RemoteLogSegmentMetadata, RemoteSegmentStore, RemoteStorageError, TopicIdPartition
from tierlog.tiered.table.backfill import BACKFILL_SEGMENTS_PER_PASS, aborted_in, backfill_due

__all__ = ["FETCH_BYTES", "backfill_pass"]

log = logging.getLogger(__name__)
FETCH_BYTES = 8 * 1024 * 1024


async def backfill_pass(ctx, tip: TopicIdPartition, part) -> bool:
    """Commit due remote segments to the table; True when the table covers every remote segment."""
    cache = ctx.metadata.cache(tip)
    if cache is None or ctx.tables.known_covered(tip.topic, tip.partition) >= \
            part.highest_offset_in_remote_storage:
        return True                     # this broker committed up to there itself: no catalog read
    config = part.config.values
    loop = asyncio.get_running_loop()
    covered = await loop.run_in_executor(ctx.pool, ctx.tables.covered, tip.topic, tip.partition, config)
    finished = cache.finished_segments()
    due = backfill_due(finished, covered, part.epoch_entries(), part.log_end_offset)
    txn_indexes: dict[bytes, bytes] = {}        # segment id -> its .txnindex, fetched once per pass
    for metadata in due[:BACKFILL_SEGMENTS_PER_PASS]:
        later = [m for m in finished if m.start_offset >= metadata.start_offset]
        await loop.run_in_executor(ctx.pool, _commit_one, ctx, metadata, later, txn_indexes, part, config)
        log.info("%s-%d: table backfilled with remote segment [%d, %d]", tip.topic, tip.partition,
                 metadata.start_offset, metadata.end_offset)
    return len(due) <= BACKFILL_SEGMENTS_PER_PASS


def _commit_one(ctx, metadata: RemoteLogSegmentMetadata, later: list[RemoteLogSegmentMetadata],
                txn_indexes: dict[bytes, bytes], part, config) -> None:
    segments: RemoteSegmentStore = ctx.segments
    for m in later:
        if m.segment_id.id not in txn_indexes:
            txn_indexes[m.segment_id.id] = segments.fetch_transaction_index(m)
    aborted = aborted_in([txn_indexes[m.segment_id.id] for m in later],
                         part.aborted_transactions(metadata.start_offset, metadata.end_offset + 1))
    staged = ctx.tables.staging_path(metadata)
    try:
        _download(segments, metadata, staged)
        ctx.tables.commit(metadata, staged, aborted, config)
    finally:
        staged.unlink(missing_ok=True)


def _download(segments: RemoteSegmentStore, metadata: RemoteLogSegmentMetadata, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    size = metadata.segment_size_in_bytes
    with open(path, "wb") as out:
        position = 0
        while position < size:
            chunk = segments.fetch_log_segment(metadata, position, min(size, position + FETCH_BYTES))
            if not chunk:
                raise RemoteStorageError(f"remote segment {metadata.start_offset}: ends at {position} of {size} bytes")
            out.write(chunk)
            position += len(chunk)
