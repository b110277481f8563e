"""One expiration pass of a leader (Kafka's RLMExpirationTask).

Nothing is done while the partition's remote log metadata is not caught up (being read again
from the start: an upload's FINISHED record not read back yet would make it look abandoned).
The plan comes from ``tiered.expiration_rules``: remote segments past
retention.ms / retention.bytes (local-only bytes + remote bytes) wholly below the
partition's high watermark, or wholly below the log start offset; finished
segments outside the leader's epoch lineage (zombie uploads) and second copies
of offsets other finished segments hold. The log start offset is raised first (followers learn it
from their next fetch), then each segment goes: DELETE_SEGMENT_STARTED, the
store's delete on the expiration pool, DELETE_SEGMENT_FINISHED. Uploads another
leader abandoned (COPY_SEGMENT_STARTED, not being copied here, at or below the
highest offset in remote storage) are deleted the same way.

A topic with ``tierlog.table.mode`` on has its table cut at the log start offset
before the segments go (``TableCommits.expire``: the rows below it deleted in one
Iceberg commit per table), whether retention or DeleteRecords moved the start: the
table never holds offsets the log no longer has (docs/tables.md), unless the topic's
``tierlog.table.keep.expired`` is true. A failed cut fails
the pass, which is retried; the segments are deleted once it succeeds.
"""

from __future__ import annotations

import asyncio
import logging

from tierlog.storage.table_config import OFF, TABLE_KEEP_EXPIRED, TABLE_MODE
from tierlog.tiered import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from tierlog.tiered.expiration_rules import (
    PartitionLog,
    RetentionLimits,
    plan_remote_expiration,
)

from .copy_task import metadata_update

__all__ = ["delete_segment", "expiration_pass"]

log = logging.getLogger(__name__)
_S = RemoteLogSegmentState


async def expiration_pass(ctx, tip: TopicIdPartition, part) -> int:
    """Delete what is due; returns how many segments went. Raises RemoteStorageError."""
    cache = ctx.metadata.cache(tip)
    if cache is None or not ctx.metadata.is_ready(tip):
        # the metadata is being read again (another partition of its metadata partition was just
        # assigned): a finished upload whose FINISHED record is not read back yet looks abandoned
        return 0
    config, highest = part.config, part.highest_offset_in_remote_storage
    only_local = sum(s.size for s in part.rolled_segments() if s.base_offset > highest)
    limits = RetentionLimits(config.retention_ms if config.delete_enabled else -1,
                             config.retention_bytes if config.delete_enabled else -1)
    plan = plan_remote_expiration(cache.segments(), limits, now_ms=ctx.clock_ms(),
                                  log=PartitionLog(part.log_start_offset, part.high_watermark, part.log_end_offset,
                                                   tuple(part.epoch_entries())),
                                  only_local_bytes=only_local,
                                  being_copied=frozenset(ctx.in_flight))
    if plan.new_log_start_offset is not None:
        new_start = min(plan.new_log_start_offset, part.high_watermark)
        if part.increment_log_start_offset(new_start):
            log.info("%s-%d: log start offset raised to %d by remote retention", tip.topic, tip.partition, new_start)
    await _expire_table(ctx, tip, part)
    abandoned = [m for m in cache.segments() if m.state == _S.COPY_SEGMENT_STARTED
                 and m.segment_id not in ctx.in_flight and m.end_offset <= highest]
    doomed = list(dict.fromkeys([*plan.to_delete, *abandoned]))
    for metadata in doomed:
        await delete_segment(ctx, metadata)
    return len(doomed)


async def _expire_table(ctx, tip: TopicIdPartition, part) -> None:
    config, start = part.config.values, part.log_start_offset
    if config[TABLE_MODE] == OFF or config[TABLE_KEEP_EXPIRED] or ctx.tables is None or start <= 0 or \
            ctx.tables.known_expired(tip.topic, tip.partition) >= start:
        return
    await asyncio.get_running_loop().run_in_executor(ctx.pool, ctx.tables.expire, tip.topic, tip.partition, start,
                                                     config)
    log.info("%s-%d: table rows below the log start offset %d expired", tip.topic, tip.partition, start)


async def delete_segment(ctx, metadata: RemoteLogSegmentMetadata) -> None:
    await ctx.metadata.publish(metadata_update(ctx, metadata, _S.DELETE_SEGMENT_STARTED))
    await asyncio.get_running_loop().run_in_executor(ctx.delete_pool, ctx.segments.delete_log_segment, metadata)
    await ctx.metadata.publish(metadata_update(ctx, metadata, _S.DELETE_SEGMENT_FINISHED))
    log.info("%s-%d: deleted remote segment [%d, %d]", metadata.topic_id_partition.topic,
             metadata.topic_id_partition.partition, metadata.start_offset, metadata.end_offset)

