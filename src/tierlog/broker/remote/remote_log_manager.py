"""The RemoteLogManager of one broker (Kafka's, with its copy, expiration and follower tasks).

It follows leadership through ``ReplicaManager``'s LeadershipListener hooks. Per hosted
partition of a tiered topic (``remote.storage.enable``) one asyncio task; the led partitions of
untiered topics share one task that starts a partition's own once its topic turns tiered:

- leader (at one leader epoch): assign the partition's remote log metadata, wait
  until it is caught up, find where uploads stopped (``find_highest_remote_offset``
  over the log's epochs, lowered to the end of the highest finished segment within
  the log's epoch lineage: a zombie upload's offsets are not this log's) and set
  the log's highest offset in remote storage; then
  every ``remote.log.manager.task.interval.ms`` a copy pass and an expiration pass.
  A failing pass is retried after ``remote.log.manager.task.retry.backoff.ms``
  doubling up to ``.max.ms`` (with ``.jitter``), one WARNING line each time.
  With ``remote.log.copy.disable`` nothing is copied; turning ``remote.storage.enable``
  off with ``remote.log.delete.on.disable`` deletes the partition's remote data.
- follower: the highest offset in remote storage follows the metadata (the end of
  the highest finished segment within its epoch lineage), so local retention may
  delete uploaded segments.

Local segments of a tiered log are deleted by the log's own retention, only below
the highest offset in remote storage. Uploads and deletes run on thread pools
(``remote.log.manager.copier.thread.pool.size``, ``.expiration.thread.pool.size``).
Topic deletion deletes every object under the partition's prefix in remote
storage (``on_stopped(..., topic_deleted=True)``; idempotent, any replica may),
after the uploads of that partition still running on copier threads ended: a
cancelled copy task does not stop its worker thread, whose objects would
otherwise land after the prefix was deleted.
"""

from __future__ import annotations

import asyncio
import logging
import random
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from tierlog.broker.topic_stats import BrokerTopicStats
from tierlog.clock import monotonic_s
from tierlog.net.tasks import TaskSet
from tierlog.replication.backoff import ExponentialBackoff
from tierlog.tiered import (
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    RemoteSegmentStore,
    RemoteStorageError,
    TopicIdPartition,
    partition_prefix,
)
from tierlog.tiered.copy_rules import find_highest_remote_offset
from tierlog.tiered.layout import MANIFEST_SUFFIX
from tierlog.tiered.lineage import highest_offset_in_lineage

from .copy_task import TaskContext, copy_pass
from .expiration_task import delete_segment, expiration_pass
from .rate_limit import ByteRateLimit
from .tables import TableCommits

if TYPE_CHECKING:
    from tierlog.broker.partition.partition import Partition

__all__ = ["RemoteLogManager"]

log = logging.getLogger(__name__)
READY_POLL_S = 0.1


def tip_of(part) -> TopicIdPartition:
    return TopicIdPartition(part.topic_id, part.topic, part.index)


class RemoteLogManager:
    def __init__(self, node_id: int, config, segments: RemoteSegmentStore, metadata, clock_ms,
                 stats: BrokerTopicStats | None = None, tables: TableCommits | None = None):
        self.node_id = node_id
        self.segments = segments
        self.metadata = metadata
        self.interval_s = int(config["remote.log.manager.task.interval.ms"]) / 1000
        self.backoff = ExponentialBackoff(int(config["remote.log.manager.task.retry.backoff.ms"]),
                                          int(config["remote.log.manager.task.retry.backoff.max.ms"]),
                                          jitter=float(config["remote.log.manager.task.retry.jitter"]))
        self._copier = ThreadPoolExecutor(int(config["remote.log.manager.copier.thread.pool.size"]),
                                          thread_name_prefix="rlm-copier")
        self._deleter = ThreadPoolExecutor(int(config["remote.log.manager.expiration.thread.pool.size"]),
                                           thread_name_prefix="rlm-expiration")
        self.ctx = TaskContext(node_id, segments, metadata, self._copier, self._deleter,
                               ByteRateLimit(int(config["remote.log.manager.copy.max.bytes.per.second"]),
                                             monotonic_s()), clock_ms, stats, tables)
        self._rng = random.Random()
        self._tasks = TaskSet(f"remote log manager {node_id}")
        self._running: dict[tuple[str, int], asyncio.Task] = {}
        metadata.add_listener(self._on_metadata)
        self._followed: dict[TopicIdPartition, Partition] = {}
        self._untiered: dict[tuple[str, int], Partition] = {}     # led, no remote work yet: _watch_untiered
        self._watch: asyncio.Task | None = None

    # --- LeadershipListener ----------------------------------------------------------------------------

    def on_leader(self, part) -> None:
        self._followed.pop(tip_of(part), None)
        self._untiered.pop(part.key, None)
        if self._has_remote_work(part):
            self._restart(part, self._lead(part, part.leader_epoch))
            return
        self._cancel(part.key)
        self._untiered[part.key] = part
        if self._watch is None or self._watch.done():
            self._watch = self._tasks.spawn(self._watch_untiered(), name="rlm-untiered")

    def _has_remote_work(self, part) -> bool:
        """A tiered topic, or remote data that ``remote.log.delete.on.disable`` deletes."""
        return part.tiered or bool(part.config.values["remote.log.delete.on.disable"]
                                   and self.metadata.cache(tip_of(part)))

    async def _watch_untiered(self) -> None:
        """Led partitions of untiered topics, one task for all: every
        ``remote.log.manager.task.interval.ms`` a partition whose topic turned tiered gets its
        task (a task per partition would wake thousands of times per interval for nothing)."""
        while self._untiered:
            await asyncio.sleep(self.interval_s)
            for key, part in list(self._untiered.items()):
                if not part.is_leader:
                    del self._untiered[key]
                elif self._has_remote_work(part):
                    del self._untiered[key]
                    self._restart(part, self._lead(part, part.leader_epoch))

    def on_follower(self, part) -> None:
        self._untiered.pop(part.key, None)
        self._cancel(part.key)
        self._followed[tip_of(part)] = part
        if part.tiered:
            self.metadata.assign(tip_of(part))
            self._on_metadata(tip_of(part))

    def on_stopped(self, part, topic_deleted: bool) -> None:
        self._untiered.pop(part.key, None)
        self._cancel(part.key)
        tip = tip_of(part)
        self._followed.pop(tip, None)
        if topic_deleted and part.tiered:
            self._tasks.spawn(self._delete_partition(tip), name=f"rlm-delete-{part.topic}-{part.index}")
        else:
            self.metadata.unassign(tip)

    async def close(self) -> None:
        await self._tasks.close()
        self._copier.shutdown(wait=False, cancel_futures=True)
        self._deleter.shutdown(wait=False, cancel_futures=True)

    # --- tasks -------------------------------------------------------------------------------------

    def _restart(self, part, coro) -> None:
        self._cancel(part.key)
        task = self._tasks.spawn(coro, name=f"rlm-{part.topic}-{part.index}")
        if task is not None:
            self._running[part.key] = task

    def _cancel(self, key) -> None:
        task = self._running.pop(key, None)
        if task is not None:
            task.cancel()

    async def _lead(self, part, epoch: int) -> None:
        tip = tip_of(part)

        def still_leader() -> bool:
            return part.leads(epoch)

        failures, resumed = 0, False
        while still_leader():
            delay = self.interval_s
            try:
                if part.tiered:
                    self.metadata.assign(tip)
                    if not self.metadata.is_ready(tip):
                        await asyncio.sleep(READY_POLL_S)
                        continue
                    if not resumed:
                        self._resume(tip, part)
                        resumed = True
                    if not part.config.values["remote.log.copy.disable"]:
                        await copy_pass(self.ctx, tip, part, still_leader)
                    await expiration_pass(self.ctx, tip, part)
                elif part.config.values["remote.log.delete.on.disable"] and self.metadata.cache(tip):
                    await self._delete_all(tip)
                failures = 0
            except RemoteStorageError as e:
                failures += 1
                delay = self.backoff.delay_ms(failures, self._rng) / 1000
                log.warning("%s-%d: tiered storage pass failed (attempt %d, retrying in %.1fs): %s",
                            part.topic, part.index, failures, delay, e)
            await asyncio.sleep(delay)

    def _resume(self, tip: TopicIdPartition, part) -> None:
        """Where uploads stopped (a new leader's first step, Kafka's findHighestRemoteOffset)."""
        cache, entries, log_end = self.metadata.cache(tip), part.epoch_entries(), part.log_end_offset
        found = find_highest_remote_offset(entries, log_end, cache.highest_offset_for_epoch)
        offset = min(found.offset, highest_offset_in_lineage(cache.finished_segments(), entries, log_end))
        part.resume_uploads_after(offset)
        log.info("%s-%d: uploads resume after offset %d", part.topic, part.index, offset)

    def _on_metadata(self, tip: TopicIdPartition) -> None:
        """A follower's highest offset in remote storage: the end of the last finished segment."""
        part = self._followed.get(tip)
        cache = self.metadata.cache(tip)
        if part is None or cache is None or part.is_leader:
            return
        highest = highest_offset_in_lineage(cache.finished_segments(), part.epoch_entries(),
                                            part.log_end_offset)
        if highest >= 0:
            part.resume_uploads_after(highest)

    async def _delete_all(self, tip: TopicIdPartition) -> None:
        for metadata in self.metadata.cache(tip).segments():
            await delete_segment(self.ctx, metadata)

    async def _delete_partition(self, tip: TopicIdPartition) -> None:
        """A deleted topic's partition: every object under its prefix, manifests first -- once no
        upload of it is running (the copy task was cancelled, its worker thread was not)."""
        await self._mark_deleted(tip, RemotePartitionDeleteState.DELETE_PARTITION_MARKED)
        await self.ctx.uploads_finished(tip)
        loop = asyncio.get_running_loop()
        for attempt in range(1, 11):
            try:
                await loop.run_in_executor(self._deleter, _delete_prefix, self.segments.store, partition_prefix(tip))
                break
            except RemoteStorageError as e:
                log.warning("%s-%d: deleting remote data failed (attempt %d): %s", tip.topic, tip.partition,
                            attempt, e)
                await asyncio.sleep(self.backoff.delay_ms(attempt, self._rng) / 1000)
        await self._mark_deleted(tip, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED)
        self.metadata.unassign(tip)
        log.info("%s-%d: remote data deleted with the topic", tip.topic, tip.partition)

    async def _mark_deleted(self, tip: TopicIdPartition, state: RemotePartitionDeleteState) -> None:
        if self.metadata.cache(tip) is None:
            return
        try:
            await self.metadata.publish(RemotePartitionDeleteMetadata(tip, state, self.ctx.clock_ms(), self.node_id))
        except RemoteStorageError as e:
            log.debug("%s: partition delete %s not recorded: %s", tip, state.name, e)


def _delete_prefix(store, prefix: str) -> None:
    keys = store.list_keys(prefix)
    for key in sorted(keys, key=lambda k: not k.endswith(MANIFEST_SUFFIX)):
        store.delete(key)
