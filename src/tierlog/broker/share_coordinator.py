"""The share coordinator (KIP-932; Kafka's ShareCoordinatorService): the persisted state of every
share-partition -- a share group reading one topic partition -- kept in ``__share_group_state``
on the coordinator runtime (``coordinator_runtime``), driven by the sans-IO rules of
``group.share_state``.

- Hosting, loading (COORDINATOR_LOAD_IN_PROGRESS meanwhile), the lease and the batched acks=all
  writes are the runtime's (``runtime`` is the leadership listener to register); a key whose
  partition is not led here answers NOT_COORDINATOR.
- A share-partition's coordinator partition is Kafka's: the key "group:topicId:partition" (the
  topic id in Kafka's Uuid string form) hashed like a group id, modulo
  ``share.coordinator.state.topic.num.partitions``.
- The requests are Kafka's inter-broker APIs, called by the partition leaders' persister:
  ``initialize_state`` (InitializeShareGroupState), ``read_state`` (ReadShareGroupState),
  ``write_state`` (WriteShareGroupState), ``read_state_summary`` (ReadShareGroupStateSummary),
  ``delete_state`` (DeleteShareGroupState).  A request's records are applied to the shard at
  once and answered once committed; a write that fails reloads the partition from its log, so
  the shard never keeps what the log does not hold.
- Pruning (Kafka's share.coordinator.state.topic.prune.interval.ms): every interval, a loaded
  partition waits for the writes in flight, then raises its log start to the shard's
  ``prune_offset`` (at most the high watermark) through DeleteRecords' path on the leader
  (``ReplicaManager.delete_records``: followers follow the leader's log start), so the topic
  (cleanup.policy=delete, no retention) holds only what a reload needs.
"""
from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable
from typing import Any

from tierlog.group import coordinator_partition
from tierlog.group.share_state import ShareStateShard
from tierlog.group.share_state_records import SharePartitionKey
from tierlog.protocol.errors import ErrorCode

from .coordinator_runtime import CoordinatorRuntime, Hosted

__all__ = ["SHARE_STATE_TOPIC", "ShareCoordinator"]

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC = "__share_group_state"
_PRUNE_TIMER = "prune"
_Part = Hosted[ShareStateShard]
Records = list[tuple[bytes, bytes | None]]


def coordinator_key(spk: SharePartitionKey) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey: "group:topicId:partition"."""
    topic_id = base64.urlsafe_b64encode(spk.topic_id).decode("ascii").rstrip("=")
    return f"{spk.group}:{topic_id}:{spk.partition}"


class _Loader:
    def __init__(self, index: int, updates_per_snapshot: int):
        self.index = index
        self.shard = ShareStateShard(updates_per_snapshot)

    def replay(self, header, records) -> None:
        if header.is_control:
            return
        for r in records:
            if r.key is None:
                continue
            try:
                self.shard.replay(r.key, r.value, r.offset)
            except Exception as e:     # noqa: BLE001 - a bad record is skipped, not fatal to the load
                log.warning("%s-%d: skipping unreadable record at offset %d: %s", SHARE_STATE_TOPIC, self.index,
                            r.offset, e)

    def finish(self, now_ms: int) -> ShareStateShard:
        return self.shard


class ShareCoordinator:
    def __init__(self, config, replicas, clock_ms: Callable[[], int],
                 image_leader: Callable[[str, int], int] = lambda topic, index: -1):
        self.node_id = config.node_id
        self.num_partitions = config["share.coordinator.state.topic.num.partitions"]
        self.replication_factor = config["share.coordinator.state.topic.replication.factor"]
        self.min_isr = config["share.coordinator.state.topic.min.isr"]
        self.segment_bytes = config["share.coordinator.state.topic.segment.bytes"]
        self._updates_per_snapshot = config["share.coordinator.snapshot.update.records.per.snapshot"]
        self._prune_interval_s = config["share.coordinator.state.topic.prune.interval.ms"] / 1000
        self._write_timeout_ms = config["share.coordinator.write.timeout.ms"]
        self._replicas = replicas
        self._clock_ms = clock_ms
        self.runtime: CoordinatorRuntime[ShareStateShard] = CoordinatorRuntime(
            SHARE_STATE_TOPIC, self, replicas, clock_ms, node_id=self.node_id,
            write_timeout_ms=config["share.coordinator.write.timeout.ms"], image_leader=image_leader)
        self.should_create_topic = self.runtime.should_create_topic

    # -- the runtime's hooks (the runtime itself is ReplicaManager's leadership listener) ------------
    def new_local(self) -> None:
        return None

    def loader(self, hosted: _Part) -> _Loader:
        return _Loader(hosted.part.index, self._updates_per_snapshot)

    def loaded(self, hosted: _Part) -> None:
        assert hosted.state is not None, "called once loaded"
        log.info("%s-%d: loaded %d share-partitions", SHARE_STATE_TOPIC, hosted.part.index, len(hosted.state))
        self._arm_prune(hosted)

    def unloaded(self, hosted: _Part) -> None:
        pass            # writes in flight end NOT_COORDINATOR

    def written(self, hosted: _Part, waiters: list[asyncio.Future], error: ErrorCode, end_offset: int | None,
                producer: tuple[int, int] | None) -> None:
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(error)
        if error and self.runtime.leading(hosted) and hosted.state is not None:
            self.runtime.reload(hosted)     # the shard applied what the log may not hold

    # -- pruning ----------------------------------------------------------------------------------------
    def _arm_prune(self, hosted: _Part) -> None:
        self.runtime.schedule_in(hosted, _PRUNE_TIMER, self._prune_interval_s, lambda now_ms: self._prune_due(hosted))

    def _prune_due(self, hosted: _Part) -> None:
        self._arm_prune(hosted)
        self.runtime.spawn(self.prune(hosted), f"{SHARE_STATE_TOPIC}-prune-{hosted.part.index}")

    async def prune(self, hosted: _Part) -> int:
        """Raise the partition's log start to its shard's prune offset once the writes applied so
        far are committed; the log start after it."""
        part = hosted.part
        assert hosted.state is not None, "pruned once loaded"
        offset = hosted.state.prune_offset()
        if offset > part.log_start_offset and not await self._commit(hosted, []) and self.runtime.leading(hosted):
            error, _lw, _wait = self._replicas.delete_records(part, min(offset, part.high_watermark),
                                                             self._write_timeout_ms)
            if error:
                log.info("%s-%d: pruning below %d: %s", SHARE_STATE_TOPIC, part.index, offset, error.name)
        return part.log_start_offset

    # -- finding a share-partition ------------------------------------------------------------------
    def partition_for(self, spk: SharePartitionKey) -> int:
        return self.partition_for_key(coordinator_key(spk))

    def partition_for_key(self, key: str) -> int:
        """The partition of a share coordinator key "group:topicId:partition" (FindCoordinator key type 2)."""
        return coordinator_partition(key, self.num_partitions)

    def _locate(self, spk: SharePartitionKey) -> tuple[_Part | None, int]:
        hosted, error = self.runtime.locate(self.partition_for(spk))
        if hosted is not None and hosted.state is not None:
            hosted.state.log_end_offset = hosted.part.log_end_offset   # the offsets of the records written next
        return hosted, error

    async def _commit(self, hosted: _Part, records: Records) -> ErrorCode:
        """Write ``records`` and wait; without records, wait for the writes still in flight (their
        state is already in the shard: nothing is answered from it before it is committed)."""
        return await self.runtime.write_and_wait(hosted, records)

    # -- requests (Kafka's inter-broker share-state APIs) ---------------------------------------------
    async def initialize_state(self, spk: SharePartitionKey, state_epoch: int, start_offset: int) -> int:
        """InitializeShareGroupState for one share-partition."""
        hosted, error = self._locate(spk)
        if hosted is None or hosted.state is None:
            return error
        error, records = hosted.state.initialize(spk, state_epoch, start_offset, self._clock_ms())
        return error or await self._commit(hosted, records)

    async def read_state(self, spk: SharePartitionKey, leader_epoch: int) -> tuple[int, dict[str, Any] | None]:
        """ReadShareGroupState for one share-partition: (error, {StateEpoch, StartOffset, StateBatches})."""
        hosted, error = self._locate(spk)
        if hosted is None or hosted.state is None:
            return error, None
        error, answer, records = hosted.state.read(spk, leader_epoch)
        if not error:
            error = await self._commit(hosted, records)     # the new leader epoch, when it moved
        return error, answer if not error else None

    async def write_state(self, spk: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                          batches: list[dict[str, Any]]) -> int:
        """WriteShareGroupState for one share-partition."""
        hosted, error = self._locate(spk)
        if hosted is None or hosted.state is None:
            return error
        error, records = hosted.state.write(spk, state_epoch, leader_epoch, start_offset, batches, self._clock_ms())
        return error or await self._commit(hosted, records)

    async def read_state_summary(self, spk: SharePartitionKey) -> tuple[int, dict[str, Any] | None]:
        """ReadShareGroupStateSummary for one share-partition: (error, {StateEpoch, LeaderEpoch, StartOffset})."""
        hosted, error = self._locate(spk)
        if hosted is None or hosted.state is None:
            return error, None
        error, answer = hosted.state.read_summary(spk)
        if not error:
            error = await self._commit(hosted, [])
        return error, answer if not error else None

    async def delete_state(self, spk: SharePartitionKey) -> int:
        """DeleteShareGroupState for one share-partition."""
        hosted, error = self._locate(spk)
        if hosted is None or hosted.state is None:
            return error
        error, records = hosted.state.delete(spk)
        return error or await self._commit(hosted, records)

    async def close(self) -> None:
        await self.runtime.close()
