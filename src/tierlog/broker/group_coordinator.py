"""The group coordinator's asyncio shell: one ``coordinator.GroupShard`` per
``__consumer_offsets`` partition this broker leads.

- Leadership (``ReplicaManager`` calls ``on_leader`` / ``on_follower`` /
  ``on_stopped``): becoming leader of a partition loads its shard by reading the
  partition's log from its start (requests meanwhile get
  COORDINATOR_LOAD_IN_PROGRESS); losing it drops the shard and answers every
  request still waiting in it NOT_COORDINATOR.  A shard is used only while its
  partition keeps the leader state it was loaded under.
- Requests (``run``): the shard's call returns an ``Output``.  The outputs with
  records that arrive within group.coordinator.append.linger.ms of the first
  (every request of any group of the partition; 0: of one event-loop round) are
  appended as one batch (Kafka's CoordinatorRuntime batch; at most the
  partition's max.message.bytes)
  with acks=all through ``ReplicaManager.append_records``
  (``Partition.append_as_leader``, origin coordinator, as Produce does); their
  answers wait until the high watermark passes the batch (at most
  offsets.commit.timeout.ms: then COORDINATOR_NOT_AVAILABLE, or NOT_COORDINATOR
  when leadership moved).  A TxnOffsetCommit's records go in a transactional
  batch of their own, after the round's batch.  Answers without records join the
  round's batch, or wait for the latest write still in flight (and get its
  error): they may show state that write made (a follower's SyncGroup in Stable
  gets the assignment whose record is still being replicated), which a new
  coordinator would not have if it were lost (Kafka's rule: a read after a write
  completes when the write commits).
- A failed write: every answer in its batch carries the error, never the writes
  after it (one that commits commits everything before it).  A write refused before it reached
  the log (ISR below min.insync.replicas) reloads the shard from the log, since the
  shard already holds what the write changed; a write that timed out takes back a
  classic assignment it carried (``GroupShard.write_failed``: the group rebalances),
  and its offset commits take effect if the high watermark passes them later.
- A ticker runs the shards' timeouts (sessions, rebalances, offset expiry).
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
from tierlog.net.tasks import TaskSet
from tierlog.protocol.errors import ErrorCode
from tierlog.records.control import COMMIT, control_marker
from tierlog.records.header import HEADER_SIZE

from .coordinator_log import Appended, append, committed, coordinator_moving, load_log
from .partition import Partition

__all__ = ["OFFSETS_TOPIC", "GroupCoordinator"]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
TICK_S = 0.1
TOPIC_CREATE_RETRY_MS = 5000
# a record's framing in a v2 batch at most: its varint length, offset delta, key and value lengths,
# attributes, headers count, and a zero timestamp delta (every record of a batch has the batch's now_ms)
RECORD_OVERHEAD = 24


@dataclass
class _Batch:
    """The writes of one event-loop round to one partition: one append, one high-watermark wait,
    their answers together (Kafka's CoordinatorRuntime batch).  At most ``max_bytes`` of keys and
    values (the partition's max.message.bytes), unless one write alone is larger."""
    max_bytes: int
    outputs: list[Output] = field(default_factory=list)
    size: int = HEADER_SIZE

    def add(self, out: Output) -> bool:
        """Take ``out`` (False: it does not fit; the batch must be written first)."""
        size = sum(len(k) + len(v or b"") + RECORD_OVERHEAD for k, v in out.records)
        if self.outputs and self.size + size > self.max_bytes:
            return False
        self.outputs.append(out)
        self.size += size
        return True


@dataclass
class _Hosted:
    part: Partition
    leader_epoch: int                                   # the lease: led at this epoch (``Partition.leads``)
    shard: GroupShard | None = None                     # None while loading
    waiting: dict = field(default_factory=dict)         # token -> error answer builder
    pending: _Batch | None = None                       # this round's writes, not appended yet
    last_append: asyncio.Task | None = None             # the latest write: answers without records wait for it
    late: list = field(default_factory=list)            # (end offset, on_commit) of writes not committed in time
    early_markers: list = field(default_factory=list)   # (producer id, commit) of markers committed while loading


class GroupCoordinator:
    def __init__(self, config, replicas, clock_ms: Callable[[], int],
                 group_configs: Callable[[str], Mapping[str, str]] = lambda group_id: {},
                 image_leader: Callable[[str, int], int] = lambda topic, index: -1):
        self.node_id = config.node_id
        self.config = GroupConfig.from_node_config(config)
        self.num_partitions = config["offsets.topic.num.partitions"]
        self.replication_factor = config["offsets.topic.replication.factor"]
        self.segment_bytes = config["offsets.topic.segment.bytes"]
        self._commit_timeout_ms = config["offsets.commit.timeout.ms"]
        self._linger_s = config["group.coordinator.append.linger.ms"] / 1000
        self._replicas = replicas
        self._clock_ms = clock_ms
        self._rng = random.Random()
        self._hosted: dict[int, _Hosted] = {}
        self._tasks = TaskSet(f"group coordinator {self.node_id}")
        self._ticking = False
        self._last_topic_create_ms = -TOPIC_CREATE_RETRY_MS
        self._view: tuple[object, TopicsView] | None = None
        self._group_configs = group_configs         # group id -> its dynamic configs (the image's)
        self._image_leader = image_leader           # (topic, partition) -> its leader in the newest image

    # -- leadership ----------------------------------------------------------------------
    def on_leader(self, part: Partition) -> None:
        if part.topic != OFFSETS_TOPIC:
            return
        self._drop(part.index)
        hosted = self._hosted[part.index] = _Hosted(part, part.leader_epoch)
        self._tasks.spawn(self._load(hosted), name=f"group-load-{part.index}")
        if not self._ticking:
            self._ticking = True
            self._tasks.spawn(self._tick_loop(), name="group-coordinator-tick")

    def on_follower(self, part: Partition) -> None:
        if part.topic == OFFSETS_TOPIC:
            self._drop(part.index)

    def on_stopped(self, part: Partition, topic_deleted: bool) -> None:
        if part.topic == OFFSETS_TOPIC:
            self._drop(part.index)

    def _drop(self, index: int) -> None:
        hosted = self._hosted.pop(index, None)
        if hosted is None:
            return
        log.info("%s-%d: no longer coordinating its groups", OFFSETS_TOPIC, index)
        for token, error_answer in list(hosted.waiting.items()):
            _resolve(token, error_answer(ErrorCode.NOT_COORDINATOR))
        hosted.waiting.clear()

    def _leading(self, hosted: _Hosted) -> bool:
        part = hosted.part
        return self._hosted.get(part.index) is hosted and part.leads(hosted.leader_epoch)

    async def _load(self, hosted: _Hosted) -> None:
        part, shard = hosted.part, GroupShard(hosted.part.index, self.config, self._rng, self._group_configs)

        def replay(header, records) -> None:
            if header.is_control:
                marker = control_marker(records)
                if marker is not None:
                    shard.complete_txn(header.producer_id, marker == COMMIT)
            elif header.is_transactional:
                _replay_txn(shard, part.index, header.producer_id, records)
            else:
                _replay(shard, part.index, records)
        if await load_log(part, lambda: self._leading(hosted), replay):
            shard.loaded(self._clock_ms())
            for producer_id, commit in hosted.early_markers:      # a second completion is a no-op
                shard.complete_txn(producer_id, commit)
            hosted.shard = shard
            log.info("%s-%d: loaded %d groups", OFFSETS_TOPIC, part.index, len(shard.groups))

    # -- requests ------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.num_partitions)

    def locate(self, group_id: str) -> tuple[_Hosted | None, int]:
        if not group_id:
            return None, ErrorCode.INVALID_GROUP_ID
        index = self.partition_for(group_id)
        hosted = self._hosted.get(index)
        if hosted is None or not self._leading(hosted):
            return None, coordinator_moving(self._image_leader(OFFSETS_TOPIC, index), self.node_id)
        if hosted.shard is None:
            return None, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return hosted, ErrorCode.NONE

    def read(self, group_id: str, fn: Callable[[GroupShard], dict], error_answer: Callable[[int], dict]) -> dict:
        """A read-only call on the group's shard."""
        hosted, error = self.locate(group_id)
        if error:
            return error_answer(error)
        assert hosted is not None and hosted.shard is not None, "locate answers NONE with a loaded shard"
        return fn(hosted.shard)

    async def run(self, group_id: str, call: Callable[[GroupShard, object, int], Output],
                  error_answer: Callable[[int], dict]) -> dict:
        """Call the group's shard with a fresh token; its answer, once any records it wrote are committed."""
        hosted, error = self.locate(group_id)
        if error:
            return error_answer(error)
        assert hosted is not None and hosted.shard is not None, "locate answers NONE with a loaded shard"
        token = asyncio.get_running_loop().create_future()
        hosted.waiting[token] = error_answer
        self._emit(hosted, call(hosted.shard, token, self._clock_ms()))
        try:
            return await token
        finally:
            hosted.waiting.pop(token, None)

    def loaded_shards(self) -> tuple[list[GroupShard], bool]:
        """The shards loaded here, and whether any is still loading."""
        hosted = [h for h in self._hosted.values() if self._leading(h)]
        return [h.shard for h in hosted if h.shard is not None], any(h.shard is None for h in hosted)

    def topics_view(self, image) -> TopicsView:
        """The topics of a metadata image as the consumer protocol sees them (cached per image)."""
        if self._view is None or self._view[0] is not image:
            topics = {name: (t.topic_id, len(t.partitions)) for name, t in image.topics.items()}
            self._view = (image, TopicsView(topics, image.epoch))
        return self._view[1]

    def should_create_topic(self) -> bool:
        """At most one creation of __consumer_offsets in flight per TOPIC_CREATE_RETRY_MS."""
        now = self._clock_ms()
        if now - self._last_topic_create_ms < TOPIC_CREATE_RETRY_MS:
            return False
        self._last_topic_create_ms = now
        return True

    # -- output ----------------------------------------------------------------------------
    def _emit(self, hosted: _Hosted, out: Output) -> None:
        if out.txn_producer is not None and out.records:    # a transaction's records go alone, after the round's
            self._flush(hosted, hosted.pending)
            self._write(hosted, [out], out.txn_producer)
            return
        if hosted.pending is None:
            if not out.records:
                self._answer_after_last(hosted, out)
                return
            batch = hosted.pending = _Batch(hosted.part.config.max_message_bytes)
            loop = asyncio.get_running_loop()
            if self._linger_s > 0:
                loop.call_later(self._linger_s, self._flush, hosted, batch)
            else:
                loop.call_soon(self._flush, hosted, batch)      # once this round's calls are in
        if not hosted.pending.add(out):         # full: written now, ``out`` opens the next batch
            self._flush(hosted, hosted.pending)
            self._emit(hosted, out)

    def _answer_after_last(self, hosted: _Hosted, out: Output) -> None:
        """Answers without records, none of this round's writes pending: now, or after the latest write."""
        last = hosted.last_append
        if last is None or last.done():
            for token, response in out.answers:
                _resolve(token, response)
        else:
            self._tasks.spawn(self._after(last, out), name=f"group-answer-{hosted.part.index}")

    def _flush(self, hosted: _Hosted, batch: _Batch | None) -> None:
        """Write ``batch`` if it is still the one being filled (a full one was written already) and the
        partition's shard was not dropped while it lingered (its answers went out NOT_COORDINATOR)."""
        if batch is not None and hosted.pending is batch:
            hosted.pending = None
            if self._hosted.get(hosted.part.index) is hosted:
                self._write(hosted, batch.outputs, None)

    def _write(self, hosted: _Hosted, outputs: list[Output], producer: tuple[int, int] | None) -> None:
        """Append the records of ``outputs`` as one batch now (log order is call order); a task
        answers them once it is committed."""
        records = [r for out in outputs for r in out.records]
        appended = append(self._replicas, hosted.part, records, self._commit_timeout_ms, self._clock_ms(),
                          lambda: self._leading(hosted), producer)
        if appended.error:
            # refused before the log: reload before a later write appends records made from what this one changed
            self._fail(hosted, outputs, appended.error)
            if self._leading(hosted):
                self._reload(hosted)
            return
        hosted.last_append = self._tasks.spawn(self._complete(hosted, outputs, appended, hosted.last_append),
                                               name=f"group-append-{hosted.part.index}")

    async def _complete(self, hosted: _Hosted, outputs: list[Output], appended: Appended,
                        previous: asyncio.Task | None) -> ErrorCode:
        assert appended.end_offset is not None, "a write refused before the log does not complete"
        error = await committed(appended, lambda: self._leading(hosted))
        if previous is not None:
            await previous      # answers leave in log order; a write that committed needs nothing of earlier ones
        on_commit = [c for out in outputs for c in out.on_commit]
        producer = outputs[0].txn_producer
        if error:
            self._fail(hosted, outputs, error)
            if on_commit and producer is None:
                hosted.late.append((appended.end_offset, on_commit))      # applied if the high watermark passes it
            on_failure = [f for out in outputs for f in out.on_failure]
            if on_failure and hosted.shard is not None and self._leading(hosted):
                lost = hosted.shard.write_failed(on_failure, self._clock_ms())
                asyncio.get_running_loop().call_soon(self._emit, hosted, lost)    # once this write is done
            return error
        if hosted.shard is not None:
            self._apply_late(hosted, appended.end_offset)       # committed too: they come before this write
            hosted.shard.apply_committed(on_commit, producer[0] if producer else -1)
        for out in outputs:
            for token, response in out.answers:
                _resolve(token, response)
        return ErrorCode.NONE

    @staticmethod
    def _apply_late(hosted: _Hosted, committed_end: int) -> None:
        """Offset commits whose write timed out take effect once the log is committed past them
        (their committers were told they failed; Kafka's timeline shows them then too)."""
        assert hosted.shard is not None, "called for a loaded shard only"
        while hosted.late and hosted.late[0][0] <= committed_end:
            hosted.shard.apply_committed(hosted.late.pop(0)[1])

    @staticmethod
    def _fail(hosted: _Hosted, outputs: list[Output], error: ErrorCode) -> None:
        log.info("%s-%d: group write failed: %s", OFFSETS_TOPIC, hosted.part.index, error.name)
        for out in outputs:
            for token, response in out.answers:
                _resolve(token, with_error(response, error))

    def _reload(self, hosted: _Hosted) -> None:
        """A write was refused before it reached the log, but the shard already holds what it
        wrote: load the shard again from the log (Kafka reverts to its last written state).
        Requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS; those waiting, NOT_COORDINATOR."""
        log.info("%s-%d: reloading the groups after a refused write", OFFSETS_TOPIC, hosted.part.index)
        self.on_leader(hosted.part)

    async def _after(self, write: asyncio.Task, out: Output) -> None:
        error = await write
        for token, response in out.answers:
            _resolve(token, with_error(response, error) if error else response)

    def on_txn_marker(self, part: Partition, producer_id: int, commit: bool) -> None:
        """A transaction marker of ``producer_id`` is committed on ``part`` (``txn_marker_writer``):
        the offsets it committed in that transaction take effect, or are dropped (KIP-98)."""
        hosted = self._hosted.get(part.index)
        if part.topic != OFFSETS_TOPIC or hosted is None:
            return
        if hosted.shard is None:        # loading: the load may have read to an end below the marker
            hosted.early_markers.append((producer_id, commit))
        else:
            hosted.shard.complete_txn(producer_id, commit)

    def on_image(self, image, delta) -> None:
        """A metadata image (``MetadataLoader.subscribe``): the committed offsets of topics it deleted go
        from the groups of every shard loaded here (Kafka's GroupCoordinator.onPartitionsDeleted)."""
        if delta is None:
            return
        base = delta.image
        deleted = {name for name in delta.changed_topics if name in base.topics and (
            name not in image.topics or image.topics[name].topic_id != base.topics[name].topic_id)}
        for hosted in self._hosted.values() if deleted else ():
            if hosted.shard is not None and self._leading(hosted):
                self._emit(hosted, hosted.shard.delete_topic_offsets(deleted, self._clock_ms()))

    # -- time ------------------------------------------------------------------------------
    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            now = self._clock_ms()
            for index, hosted in list(self._hosted.items()):
                try:
                    if not self._leading(hosted):
                        self._drop(index)
                    elif hosted.shard is not None:
                        self._apply_late(hosted, hosted.part.high_watermark)
                        for out in hosted.shard.tick(now):
                            self._emit(hosted, out)
                except Exception:
                    log.exception("%s-%d: group coordinator tick failed", OFFSETS_TOPIC, index)

    async def close(self) -> None:
        for index in list(self._hosted):
            self._drop(index)
        await self._tasks.close()


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
