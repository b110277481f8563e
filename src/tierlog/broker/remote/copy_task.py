"""One copy pass of a leader (Kafka's RLMCopyTask): upload the rolled segments that lie
wholly below the last stable offset, oldest first.

First the log's highest offset in remote storage is raised to the end of the
highest finished segment within its epoch lineage (``copy_rules.upload_resume_offset``):
an old leader's upload that finished after this leader found where uploads stopped
is not uploaded again.

Per segment: COPY_SEGMENT_STARTED metadata, upload through ``RemoteSegmentStore``
(the ``.log`` unchanged, its indexes, its ``.txnindex`` when an aborted transaction
ends in it, the producer snapshot at the next segment's base offset and the
leader-epoch checkpoint up to it) on the copier pool,
COPY_SEGMENT_FINISHED, then the log's highest offset in remote storage moves.
A failed upload is deleted by the store; its STARTED id is then marked
DELETE_SEGMENT_STARTED / FINISHED so nothing waits on it. Uploads are tracked
per partition until their worker thread is done (``TaskContext.uploads_finished``):
a cancelled copy task's upload keeps running, and topic deletion waits for it.

A segment of a topic with ``tierlog.table.mode`` on is also committed to the topic's
Iceberg table on the same copier thread right after its objects are verified
(``tables.TableCommits``, docs/tables.md): the upload is complete, and FINISHED
published, only once the commit is; a failed commit deletes the uploaded objects
and fails the upload like any other failure. Such a topic's pass runs
``TABLE_PIPELINE_SEGMENTS`` uploads of the partition at once: the next segment uploads
(objects and Parquet file) while the one before waits for its commit; the writer queues
it behind that one (``TableWriter.commit_segment``'s ``behind``), FINISHED goes out in
offset order, and an upload behind one that failed is deleted and marked deleted.

A segment that begins below where uploads stopped (a new leader whose segments
roll at other offsets than the old leader's) is uploaded whole, but its metadata
starts at the first offset not yet in remote storage: remote segments never
overlap, and a reader positions through the offset index as usual (the batches
before the start are never served from that segment). A segment rolled before
producer snapshots existed is uploaded without one (a follower rebuilding from
it starts with no producer state, as Kafka does for such segments).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections import deque
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from tierlog.storage.table_config import OFF, TABLE_MODE
from tierlog.tiered import (
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemoteSegmentStore,
    RemoteStorageError,
    SegmentManifest,
    TopicIdPartition,
)
from tierlog.tiered.copy_rules import (
    LocalSegment,
    copy_candidates,
    upload_resume_offset,
)
from tierlog.tiered.upload_epochs import leader_epoch_checkpoint, segment_leader_epochs

from ..topic_stats import BrokerTopicStats
from .rate_limit import ByteRateLimit
from .table_backfill import backfill_pass
from .tables import TableCommits

__all__ = ["TABLE_PIPELINE_SEGMENTS", "TaskContext", "copy_pass", "metadata_update"]

log = logging.getLogger(__name__)
_S = RemoteLogSegmentState
TABLE_PIPELINE_SEGMENTS = 2     # a table topic's uploads running at once per partition (one commits, one uploads)


class TaskContext:
    """What copy and expiration passes use: the store, the metadata, the pools, the rate limit, the clock."""

    def __init__(self, node_id: int, segments: RemoteSegmentStore, metadata, pool: Executor, delete_pool: Executor,
                 limit: ByteRateLimit, clock_ms, stats: BrokerTopicStats | None = None,
                 tables: TableCommits | None = None) -> None:
        self.node_id, self.segments, self.metadata = node_id, segments, metadata
        self.tables = tables
        self.stats = stats or BrokerTopicStats(lambda topic_id: None)   # RemoteCopyBytes / RemoteCopyErrors
        self.pool, self.delete_pool, self.limit, self.clock_ms = pool, delete_pool, limit, clock_ms
        self.in_flight: set[RemoteLogSegmentId] = set()
        self.uploads: dict[TopicIdPartition, set[Future]] = {}

    async def upload(self, tip: TopicIdPartition, metadata: RemoteLogSegmentMetadata,
                     data: LogSegmentData, table_commit=None, handoff: threading.Event | None = None) -> SegmentManifest:
        """The verified upload (then ``table_commit(metadata)``, if any) on the copier pool, tracked
        until its worker thread is done with it; ``handoff`` set when the thread is past its turn
        in the table's commit queue (``TableWriter.commit_segment``)."""
        future = self.pool.submit(self._upload_and_commit, metadata, data, table_commit, handoff)
        running = self.uploads.setdefault(tip, set())
        running.add(future)
        future.add_done_callback(running.discard)
        return await asyncio.wrap_future(future)

    def _upload_and_commit(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData,
                           table_commit, handoff: threading.Event | None) -> SegmentManifest:
        try:
            manifest = self.segments.copy_log_segment(metadata, data)
            if table_commit is not None:
                try:
                    table_commit(metadata)
                except RemoteStorageError:
                    self.segments.delete_log_segment(metadata)
                    raise
            return manifest
        finally:
            if handoff is not None:     # a failed upload never queues: the next one stops waiting
                handoff.set()

    async def uploads_finished(self, tip: TopicIdPartition) -> None:
        """Wait until no worker thread runs an upload of ``tip`` (a cancelled copy task's keeps going)."""
        running = list(self.uploads.pop(tip, ()))
        if running:
            await asyncio.wait([asyncio.wrap_future(f) for f in running])


async def copy_pass(ctx: TaskContext, tip: TopicIdPartition, part, still_leader) -> int:
    """Upload what is due; returns how many segments went. Raises RemoteStorageError."""
    rolled = part.rolled_segments()
    local = [LocalSegment(s.base_offset, s.next_offset, s.size, s.max_timestamp_ms) for s in rolled]
    if rolled:
        local.append(LocalSegment(rolled[-1].next_offset, part.log_end_offset, 0, -1, active=True))
    by_base = {s.base_offset: s for s in rolled}
    cache = ctx.metadata.cache(tip)
    if cache is not None:                # an old leader's upload may have finished since: never upload it again
        part.resume_uploads_after(upload_resume_offset(
            part.highest_offset_in_remote_storage, cache.finished_segments(), part.epoch_entries(),
            part.log_end_offset))
    table = part.config.values[TABLE_MODE] != OFF and ctx.tables is not None
    if table and not await backfill_pass(ctx, tip, part):
        return 0                        # the table first covers what is uploaded already (table_backfill)
    copied = 0
    depth = TABLE_PIPELINE_SEGMENTS if table else 1
    started: deque[_Started] = deque()          # uploads running, finished in offset order
    try:
        for candidate in copy_candidates(local, highest_remote_offset=part.highest_offset_in_remote_storage,
                                         log_start_offset=part.log_start_offset,
                                         last_stable_offset=part.last_stable_offset):
            if not still_leader():
                break
            try:
                next_one = await _start(ctx, tip, part, by_base[candidate.base_offset],
                                        started[-1] if started else None)
            except RemoteStorageError:
                while started:          # the uploads before it still count
                    await _finish(ctx, tip, part, started.popleft())
                raise
            started.append(next_one)
            if len(started) >= depth:
                await _finish(ctx, tip, part, started.popleft())
                copied += 1
        while started:
            await _finish(ctx, tip, part, started.popleft())
            copied += 1
    except RemoteStorageError:
        for later in started:           # uploaded behind one that failed: never finished, deleted
            await _discard(ctx, later)
        raise
    finally:
        for later in started:           # cancelled: their threads go on (tracked by ctx.uploads), never finished
            later.upload.cancel()
            ctx.in_flight.discard(later.metadata.segment_id)
    if table and still_leader():        # after the uploads: upkeep never holds them back
        await _table_upkeep(ctx, tip, part)
    return copied


@dataclass(frozen=True, slots=True)
class _Started:
    """An upload running on the copier pool (its COPY_SEGMENT_STARTED published)."""

    metadata: RemoteLogSegmentMetadata
    size: int
    upload: asyncio.Future
    handoff: threading.Event        # set once its table commit is queued (or never will be)


async def _start(ctx: TaskContext, tip: TopicIdPartition, part, seg, behind: _Started | None) -> _Started:
    """Publish COPY_SEGMENT_STARTED for ``seg`` and start its upload (after the rate limit's wait);
    ``behind``: the upload of the segment before it, still running."""
    start = max(seg.base_offset, part.highest_offset_in_remote_storage + 1, part.log_start_offset)
    entries = part.epoch_entries()
    epochs = segment_leader_epochs(entries, start, seg.next_offset)
    if not epochs:
        raise RemoteStorageError(f"{tip.topic}-{tip.partition}: no leader epoch known for [{start}, "
                                 f"{seg.next_offset}); not uploading it")
    metadata = RemoteLogSegmentMetadata(RemoteLogSegmentId(tip, uuid.uuid4().bytes), start, seg.next_offset - 1,
                                        seg.max_timestamp_ms, ctx.node_id, ctx.clock_ms(), epochs, seg.size)
    data = LogSegmentData(seg.log_path, seg.offset_index_path, seg.time_index_path,
                          part.producer_snapshot_file(seg.next_offset),
                          leader_epoch_checkpoint(entries, seg.next_offset),
                          part.transaction_index_file(seg.base_offset))
    await ctx.metadata.publish(metadata)
    ctx.in_flight.add(metadata.segment_id)
    try:
        wait = ctx.limit.delay_s(seg.size, asyncio.get_running_loop().time())
        if wait > 0:
            await asyncio.sleep(wait)
        handoff = threading.Event()
        commit = _table_commit(ctx, part, seg, None if behind is None else behind.handoff, handoff)
        upload = asyncio.ensure_future(ctx.upload(tip, metadata, data, commit, handoff))
    except BaseException:
        ctx.in_flight.discard(metadata.segment_id)
        raise
    return _Started(metadata, seg.size, upload, handoff)


async def _finish(ctx: TaskContext, tip: TopicIdPartition, part, started: _Started) -> None:
    """Wait for the upload, then COPY_SEGMENT_FINISHED and the highest offset in remote storage moves;
    a failed upload is abandoned (its STARTED id marked deleted) and its error raised."""
    metadata = started.metadata
    try:
        manifest = await started.upload
    except RemoteStorageError:
        ctx.stats.remote_copy_failed(tip.topic)
        await _abandon(ctx, metadata)
        raise
    finally:
        ctx.in_flight.discard(metadata.segment_id)
    await ctx.metadata.publish(metadata_update(ctx, metadata, _S.COPY_SEGMENT_FINISHED,
                                               manifest.metadata.custom_metadata))   # encrypted: the key id
    part.segment_uploaded(metadata.end_offset)
    ctx.stats.remote_copied(tip.topic, started.size)
    log.info("%s-%d: copied [%d, %d] (%d bytes) to remote storage", tip.topic, tip.partition,
             metadata.start_offset, metadata.end_offset, started.size)


async def _discard(ctx: TaskContext, started: _Started) -> None:
    """An upload that ran behind a failed one: once its thread is done, its objects deleted and its
    STARTED id marked deleted (its table commit, if it landed, is covered by the retry's)."""
    try:
        await started.upload
        await asyncio.get_running_loop().run_in_executor(ctx.delete_pool, ctx.segments.delete_log_segment,
                                                         started.metadata)
    except RemoteStorageError as e:     # a failed upload deleted what it wrote; else the expiration pass does
        log.debug("%s: not deleted now: %s", started.metadata.segment_id, e)
    finally:
        ctx.in_flight.discard(started.metadata.segment_id)
    await _abandon(ctx, started.metadata)


async def _table_upkeep(ctx: TaskContext, tip: TopicIdPartition, part) -> None:
    """Expired snapshots and orphan Parquet objects out, when due (no upload of this partition runs now)."""
    tables = ctx.tables
    now = ctx.clock_ms()
    if tables is None or not tables.upkeep_due(tip.topic, tip.partition, now):
        return
    try:
        expired, removed = await asyncio.get_running_loop().run_in_executor(
            ctx.pool, tables.upkeep, tip.topic, tip.partition, part.config.values, now)
    except RemoteStorageError as e:         # upkeep never holds uploads back: tried again at the next interval
        log.warning("%s", e)
        return
    if expired or removed:
        log.info("%s-%d: table upkeep: %d snapshots expired, %d unreferenced Parquet objects deleted", tip.topic,
                 tip.partition, expired, removed)


def _table_commit(ctx: TaskContext, part, seg, behind: threading.Event | None, handoff: threading.Event):
    """The table commit of ``seg``'s upload (on the copier thread), None when the topic has no table;
    ``behind`` / ``handoff``: its place in the partition's pipeline (``TableWriter.commit_segment``)."""
    config = part.config.values
    if config[TABLE_MODE] == OFF:
        return None
    tables = ctx.tables
    if tables is None:
        raise RemoteStorageError(f"{TABLE_MODE} is on but this broker has no remote storage for tables")
    aborted = part.aborted_transactions(seg.base_offset, seg.next_offset)    # their markers may be later

    def commit(metadata: RemoteLogSegmentMetadata) -> None:
        tables.commit(metadata, seg.log_path, aborted, config, behind, handoff)
    return commit


async def _abandon(ctx: TaskContext, metadata: RemoteLogSegmentMetadata) -> None:
    try:
        await ctx.metadata.publish(metadata_update(ctx, metadata, _S.DELETE_SEGMENT_STARTED))
        await ctx.metadata.publish(metadata_update(ctx, metadata, _S.DELETE_SEGMENT_FINISHED))
    except RemoteStorageError as e:      # the expiration pass deletes the abandoned id later
        log.debug("cannot mark abandoned upload %s deleted: %s", metadata.segment_id, e)


def metadata_update(ctx: TaskContext, metadata: RemoteLogSegmentMetadata, state: RemoteLogSegmentState,
                    custom_metadata: bytes | None = None):
    """This broker moving ``metadata``'s segment to ``state`` now."""
    return RemoteLogSegmentMetadataUpdate(metadata.segment_id, ctx.clock_ms(), state, ctx.node_id, custom_metadata)
