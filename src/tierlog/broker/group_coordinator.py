"""The group coordinator: one ``group.GroupShard`` per ``__consumer_offsets`` partition this
broker leads, on the coordinator runtime (``coordinator_runtime``: hosting, loading, the lease,
batched writes, timers).

- Loading: the shard replays the partition's log (offsets, group records, a transaction's
  offsets and its markers); members' sessions start when the load ends.
- Requests (``run``): the shard's call returns an ``Output``; its records go in the runtime's
  batch of the round (group.coordinator.append.linger.ms; a TxnOffsetCommit's in a
  transactional batch of its own) and its answers leave once the batch is committed
  (offsets.commit.timeout.ms: then COORDINATOR_NOT_AVAILABLE, or NOT_COORDINATOR when
  leadership moved).  Answers without records join the round's batch, or wait for the latest
  write still in flight (and get its error): they may show state that write made, which a new
  coordinator would not have if it were lost (Kafka's rule: a read after a write completes when
  the write commits).
- A failed write: every answer in its batch carries the error, never the writes after it.  A
  write refused before it reached the log reloads the shard from the log (the runtime's
  ``reload_on_refused``: the shard already holds what the write changed); a write that timed out
  takes back a classic assignment it carried (``GroupShard.write_failed``: the group
  rebalances), and its offset commits take effect once the high watermark passes them.
- Timers: each group's next timeout (sessions, pending members, join and sync phases,
  ``GroupShard.next_deadline_ms``) is a runtime timer keyed by the group, fired at that deadline
  and armed again after every call on the group; the offset retention check is one more.
- Metadata (``on_image``): a deleted topic's committed offsets are tombstoned in the loaded shards.
"""
from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tierlog.group import (
    GroupConfig,
    GroupShard,
    Output,
    TopicsView,
    coordinator_partition,
    with_error,
)
from tierlog.protocol.errors import ErrorCode
from tierlog.records.control import COMMIT, control_marker

from .coordinator_runtime import CoordinatorRuntime, Hosted
from .partition import Partition

__all__ = ["OFFSETS_TOPIC", "GroupCoordinator"]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
LATE_CHECK_MS = 100             # how often offsets whose write timed out look for the high watermark
_RETENTION = object()           # the timer key of the offset retention check
_LATE = object()                # the timer key of the late offsets' check


@dataclass
class _Local:
    """The group coordinator's bookkeeping of one hosted partition."""
    waiting: dict = field(default_factory=dict)         # token -> error answer builder
    late: list = field(default_factory=list)            # (end offset, on_commit) of writes not committed in time
    early_markers: list = field(default_factory=list)   # (producer id, commit) of markers committed while loading


_Part = Hosted[GroupShard]


class _ShardLoader:
    def __init__(self, shard: GroupShard, index: int):
        self.shard, self.index = shard, index

    def replay(self, header, records) -> None:
        if header.is_control:
            marker = control_marker(records)
            if marker is not None:
                self.shard.complete_txn(header.producer_id, marker == COMMIT)
        elif header.is_transactional:
            _replay_txn(self.shard, self.index, header.producer_id, records)
        else:
            _replay(self.shard, self.index, records)

    def finish(self, now_ms: int) -> GroupShard:
        self.shard.loaded(now_ms)
        return self.shard


class GroupCoordinator:
    def __init__(self, config, replicas, clock_ms: Callable[[], int],
                 group_configs: Callable[[str], Mapping[str, str]] = lambda group_id: {},
                 image_leader: Callable[[str, int], int] = lambda topic, index: -1):
        self.node_id = config.node_id
        self.config = GroupConfig.from_node_config(config)
        self.num_partitions = config["offsets.topic.num.partitions"]
        self.replication_factor = config["offsets.topic.replication.factor"]
        self.segment_bytes = config["offsets.topic.segment.bytes"]
        self._clock_ms = clock_ms
        self._rng = random.Random()
        self._view: tuple[object, TopicsView] | None = None
        self._group_configs = group_configs         # group id -> its dynamic configs (the image's)
        self.runtime: CoordinatorRuntime[GroupShard] = CoordinatorRuntime(
            OFFSETS_TOPIC, self, replicas, clock_ms, node_id=self.node_id,
            write_timeout_ms=config["offsets.commit.timeout.ms"],
            linger_ms=config["group.coordinator.append.linger.ms"], reload_on_refused=True, image_leader=image_leader)
        self.should_create_topic = self.runtime.should_create_topic

    # -- leadership (ReplicaManager's listener) ---------------------------------------------------
    def on_leader(self, part: Partition) -> None:
        self.runtime.on_leader(part)

    def on_follower(self, part: Partition) -> None:
        self.runtime.on_follower(part)

    def on_stopped(self, part: Partition, topic_deleted: bool) -> None:
        self.runtime.on_stopped(part, topic_deleted)

    # -- the runtime's hooks ------------------------------------------------------------------
    def new_local(self) -> _Local:
        return _Local()

    def loader(self, hosted: _Part) -> _ShardLoader:
        return _ShardLoader(GroupShard(hosted.part.index, self.config, self._rng, self._group_configs),
                            hosted.part.index)

    def loaded(self, hosted: _Part) -> None:
        shard = hosted.state
        assert shard is not None, "called once loaded"
        for producer_id, commit in hosted.local.early_markers:      # a second completion is a no-op
            shard.complete_txn(producer_id, commit)
        log.info("%s-%d: loaded %d groups", OFFSETS_TOPIC, hosted.part.index, len(shard.groups))
        for group_id in [*shard.groups, *shard.share_groups]:      # loaded members' sessions run from now
            self._arm(hosted, group_id)
        self._arm_retention(hosted)

    def unloaded(self, hosted: _Part) -> None:
        waiting = hosted.local.waiting
        for token, error_answer in list(waiting.items()):
            _resolve(token, error_answer(ErrorCode.NOT_COORDINATOR))
        waiting.clear()

    def written(self, hosted: _Part, outputs: list[Output], error: ErrorCode, end_offset: int | None,
                producer: tuple[int, int] | None) -> None:
        if error:
            self._failed(hosted, outputs, error, end_offset, producer)
            return
        if hosted.state is not None and end_offset is not None:
            self._apply_late(hosted, end_offset)        # committed too: they come before this write
        if hosted.state is not None:
            hosted.state.apply_committed([c for out in outputs for c in out.on_commit], producer[0] if producer else -1)
        for out in outputs:
            for token, response in out.answers:
                _resolve(token, response)

    def _failed(self, hosted: _Part, outputs: list[Output], error: ErrorCode, end_offset: int | None,
                producer: tuple[int, int] | None) -> None:
        for out in outputs:
            for token, response in out.answers:
                _resolve(token, with_error(response, error))
        on_commit = [c for out in outputs for c in out.on_commit]
        if on_commit and producer is None and end_offset is not None:
            hosted.local.late.append((end_offset, on_commit))      # applied if the high watermark passes it
            self._arm_late(hosted)
        on_failure = [f for out in outputs for f in out.on_failure]
        if on_failure and end_offset is not None and hosted.state is not None and self.runtime.leading(hosted):
            lost = hosted.state.write_failed(on_failure, self._clock_ms())
            asyncio.get_running_loop().call_soon(self._emit, hosted, lost)    # once this write is done
            for group_id, _generation in on_failure:
                self._arm(hosted, group_id)

    # -- requests ------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.num_partitions)

    def locate(self, group_id: str) -> tuple[_Part | None, int]:
        if not group_id:
            return None, ErrorCode.INVALID_GROUP_ID
        return self.runtime.locate(self.partition_for(group_id))

    def read(self, group_id: str, fn: Callable[[GroupShard], dict], error_answer: Callable[[int], dict]) -> dict:
        """A read-only call on the group's shard."""
        hosted, error = self.locate(group_id)
        if error:
            return error_answer(error)
        assert hosted is not None and hosted.state is not None, "locate answers NONE with a loaded shard"
        return fn(hosted.state)

    async def run(self, group_id: str, call: Callable[[GroupShard, object, int], Output],
                  error_answer: Callable[[int], dict]) -> dict:
        """Call the group's shard with a fresh token; its answer, once any records it wrote are committed."""
        hosted, error = self.locate(group_id)
        if error:
            return error_answer(error)
        assert hosted is not None and hosted.state is not None, "locate answers NONE with a loaded shard"
        token = asyncio.get_running_loop().create_future()
        waiting = hosted.local.waiting
        waiting[token] = error_answer
        self._emit(hosted, call(hosted.state, token, self._clock_ms()))
        self._arm(hosted, group_id)
        try:
            return await token
        finally:
            waiting.pop(token, None)

    def loaded_shards(self) -> tuple[list[GroupShard], bool]:
        """The shards loaded here, and whether any is still loading."""
        return self.runtime.states()

    def topics_view(self, image) -> TopicsView:
        """The topics of a metadata image as the consumer protocol sees them (cached per image)."""
        if self._view is None or self._view[0] is not image:
            topics = {name: (t.topic_id, len(t.partitions)) for name, t in image.topics.items()}
            self._view = (image, TopicsView(topics, image.epoch))
        return self._view[1]

    def _emit(self, hosted: _Part, out: Output) -> None:
        self.runtime.write(hosted, out.records, out, out.txn_producer)

    def on_txn_marker(self, part: Partition, producer_id: int, commit: bool) -> None:
        """A transaction marker of ``producer_id`` is committed on ``part`` (``txn_marker_writer``):
        the offsets it committed in that transaction take effect, or are dropped (KIP-98)."""
        hosted = self.runtime.hosted(part.index) if part.topic == OFFSETS_TOPIC else None
        if hosted is None:
            return
        if hosted.state is None:        # loading: the load may have read to an end below the marker
            hosted.local.early_markers.append((producer_id, commit))
        else:
            hosted.state.complete_txn(producer_id, commit)

    def on_image(self, image, delta) -> None:
        """A metadata image (``MetadataLoader.subscribe``): the committed offsets of topics it deleted go
        from the groups of every shard loaded here (Kafka's GroupCoordinator.onPartitionsDeleted)."""
        if delta is None:
            return
        base = delta.image
        deleted = {name for name in delta.changed_topics if name in base.topics and (
            name not in image.topics or image.topics[name].topic_id != base.topics[name].topic_id)}
        deleted_ids = {base.topics[name].topic_id for name in deleted}
        for hosted in self.runtime.led() if deleted else ():
            assert hosted.state is not None, "led() gives loaded partitions"
            self._emit(hosted, hosted.state.delete_topic_offsets(deleted, self._clock_ms(), deleted_ids))

    # -- time ------------------------------------------------------------------------------
    def _arm(self, hosted: _Part, group_id: str) -> None:
        """The group's timer at its next deadline (after every change of the group)."""
        assert hosted.state is not None, "armed for a loaded shard only"
        self.runtime.schedule(hosted, group_id, hosted.state.next_deadline_ms(group_id),
                              lambda now: self._group_due(hosted, group_id, now))

    def _group_due(self, hosted: _Part, group_id: str, now_ms: int) -> None:
        assert hosted.state is not None, "timers fire for a loaded shard only"
        out = hosted.state.tick_group(group_id, now_ms)
        if out:
            self._emit(hosted, out)
        self._arm(hosted, group_id)         # none once the group (of any type, share too) has no deadline

    def _arm_retention(self, hosted: _Part) -> None:
        assert hosted.state is not None, "armed for a loaded shard only"
        self.runtime.schedule(hosted, _RETENTION, hosted.state.next_retention_check_ms,
                              lambda now: self._retention_due(hosted, now))

    def _retention_due(self, hosted: _Part, now_ms: int) -> None:
        assert hosted.state is not None, "timers fire for a loaded shard only"
        out = hosted.state.check_retention(now_ms)
        if out:
            self._emit(hosted, out)
        self._arm_retention(hosted)

    def _arm_late(self, hosted: _Part) -> None:
        self.runtime.schedule_in(hosted, _LATE, LATE_CHECK_MS / 1000, lambda now: self._late_due(hosted))

    def _late_due(self, hosted: _Part) -> None:
        self._apply_late(hosted, hosted.part.high_watermark)
        if hosted.local.late:
            self._arm_late(hosted)

    @staticmethod
    def _apply_late(hosted: _Part, committed_end: int) -> None:
        """Offset commits whose write timed out take effect once the log is committed past them
        (their committers were told they failed; Kafka's timeline shows them then too)."""
        assert hosted.state is not None, "called for a loaded shard only"
        late = hosted.local.late
        while late and late[0][0] <= committed_end:
            hosted.state.apply_committed(late.pop(0)[1])

    async def close(self) -> None:
        await self.runtime.close()


def _replay(shard: GroupShard, index: int, records) -> None:
    for r in records:
        if r.key is None:
            continue
        try:
            shard.replay(r.key, r.value)
        except Exception as e:     # noqa: BLE001 - a bad record is skipped, not fatal to the load
            log.warning("%s-%d: skipping unreadable record at offset %d: %s", OFFSETS_TOPIC, index, r.offset, e)


def _replay_txn(shard: GroupShard, index: int, producer_id: int, records) -> None:
    for r in records:
        if r.key is None:
            continue
        try:
            shard.replay_txn(producer_id, r.key, r.value)
        except Exception as e:     # noqa: BLE001 - a bad record is skipped, not fatal to the load
            log.warning("%s-%d: skipping unreadable record at offset %d: %s", OFFSETS_TOPIC, index, r.offset, e)


def _resolve(token, response: Mapping[str, Any]) -> None:
    if token is not None and not token.done():
        token.set_result(response)
