"""The partition leader's side of share groups (KIP-932; the shell of Kafka's SharePartitionManager):
ShareFetch and ShareAcknowledge over the sans-IO ``group.share_partition_manager``.

- **Loading**: a share-partition is read from the share coordinator (``SharePersister``) the first
  time a member fetches it here, at this broker's leader epoch; one never initialized is
  initialized first at the group's ``share.auto.offset.reset`` (latest: the high watermark,
  earliest: the log start).  A partition whose leader epoch moved since is dropped and read
  again (what was acquired under the old epoch is redelivered).  A fetch waits for loads at most
  its MaxWaitMs; a partition not loaded by then answers no records.
- **Reading**: each partition of the session is read at its next fetch offset (the lowest
  AVAILABLE in-flight offset, else the share-partition end), at most ``SHARE_READ_BYTES_MAX`` per
  partition (at least one batch) within MaxBytes over the fetch, up to
  the high watermark (the last stable offset when the group's ``share.isolation.level`` is
  read_committed), from remote storage below a tiered log's local start; acquisition stays within
  the batches read.  Offsets that are no deliverable record (markers, aborted transactions, gaps)
  are archived at once (``share_records``).
- **Long poll**: a fetch that acquired nothing waits up to MaxWaitMs for an append to one of its
  partitions or for records released here (a lock expiring, a member releasing or leaving).
- **Durability**: what a request changed is written to the share coordinator before the answer
  leaves (one write in flight per share-partition, in the order taken); a write that fails makes
  the next one carry the whole in-flight state.  FENCED_LEADER_EPOCH drops the share-partition.
- **Lock expiry**: one timer task wakes at the earliest acquisition lock deadline, releases what
  expired and writes it.  It also drops share sessions unused for group.share.max.session.timeout.ms
  (a killed member's: a live one fetches far more often), releasing what they held, so dead
  members do not fill group.share.max.share.sessions.
- **Dead letters** (KIP-1191): records archived as failed are copied to the group's
  ``errors.deadletterqueue.topic.name`` before the archiving is written (``share_dead_letters``).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tierlog.group.share_partition import AcknowledgeType, Acquired, SharePartition, SharePartitionConfig
from tierlog.group.share_partition_manager import AckBatches, SharePartitionManager
from tierlog.group.share_session import FINAL_EPOCH, TopicPartition
from tierlog.group.share_state_records import SharePartitionKey
from tierlog.metadata.group_rules import (
    SHARE_AUTO_OFFSET_RESET,
    SHARE_DELIVERY_COUNT_LIMIT,
    SHARE_DLQ_TOPIC,
    SHARE_ISOLATION_LEVEL,
    SHARE_RECORD_LOCK_DURATION,
    broker_group_settings,
    by_duration_ms,
    effective_group_configs,
)
from tierlog.protocol.errors import ErrorCode

from .partition import FetchIsolation
from .share_dead_letters import DeadLetters
from .share_metrics import ShareMetrics
from .share_persister import SharePersister
from .share_records import covered_end, select

__all__ = ["ShareFetchResult", "SharePartitions"]

log = logging.getLogger(__name__)

LOAD_WAIT_MIN_MS = 500          # a fetch waits at least this long for the share-partitions it needs to load
SHARE_READ_BYTES_MAX = 1 << 20  # bytes read per partition for one acquisition (as max.partition.fetch.bytes)
TIMER_IDLE_S = 1.0              # the timer's longest sleep while writes are to retry or sessions may go idle
_NEVER_INITIALIZED = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@dataclass
class PartitionAnswer:
    error: int = ErrorCode.NONE
    acknowledge_error: int = ErrorCode.NONE
    records: bytes = b""
    acquired: list[Acquired] = field(default_factory=list)


@dataclass
class ShareFetchResult:
    error: int = ErrorCode.NONE
    lock_timeout_ms: int = 0
    partitions: dict[TopicPartition, PartitionAnswer] = field(default_factory=dict)

    def at(self, tp: TopicPartition) -> PartitionAnswer:
        return self.partitions.setdefault(tp, PartitionAnswer())


@dataclass
class _Read:
    """One partition's read for acquisition: the bytes from ``offset`` and the end acquisition stays below."""
    offset: int
    records: bytes = b""
    end: int = 0
    aborted: list[tuple[int, int, int]] = field(default_factory=list)


class SharePartitions:
    def __init__(self, config: SharePartitionConfig, max_sessions: int, replicas, persister: SharePersister,
                 image_fn: Callable, remote, clock_ms: Callable[[], int], metrics: ShareMetrics | None = None,
                 dead_letters: DeadLetters | None = None, idle_session_ms: int = 60_000,
                 group_settings: Mapping[str, int] | None = None):
        self.config = config
        self.manager = SharePartitionManager(config, max_sessions)
        self._replicas = replicas
        self._persister = persister
        self._image_fn = image_fn
        self._remote = remote
        self._clock_ms = clock_ms
        self.metrics = metrics or ShareMetrics()
        self._dlq = dead_letters
        self._group_settings = group_settings or broker_group_settings({})     # group.share.* and their bounds
        self.idle_session_ms = idle_session_ms          # group.share.max.session.timeout.ms
        self._last_seen: dict[tuple[str, str], int] = {}     # (group, member) -> its last request here
        self._loading: dict[SharePartitionKey, asyncio.Task] = {}
        self._locks: dict[SharePartitionKey, asyncio.Lock] = {}
        self._unsynced: set[SharePartitionKey] = set()
        self._released = asyncio.Event()
        self._timer_wake = asyncio.Event()
        self._timer: asyncio.Task | None = None

    # -- group settings ------------------------------------------------------------------------------
    def group_values(self, group_id: str) -> dict[str, Any]:
        """The group's share.* configs (GROUP configs), each clamped to this broker's bounds, else the
        broker's default (``metadata.group_rules.effective_group_configs``)."""
        return effective_group_configs(self._image_fn().group_config(group_id), self._group_settings)

    def group_config(self, group_id: str) -> SharePartitionConfig:
        """The node's limits with the group's share.record.lock.duration.ms and share.delivery.count.limit."""
        values = self.group_values(group_id)
        return replace(self.config, record_lock_duration_ms=values[SHARE_RECORD_LOCK_DURATION],
                       delivery_count_limit=values[SHARE_DELIVERY_COUNT_LIMIT])

    def _read_committed(self, group_id: str) -> bool:
        return self.group_values(group_id)[SHARE_ISOLATION_LEVEL] == "read_committed"

    # -- ShareFetch ------------------------------------------------------------------------------------
    async def fetch(self, group_id: str, member_id: str, epoch: int, requested: list[TopicPartition],
                    forgotten: list[TopicPartition], acks: AckBatches, max_wait_ms: int, max_bytes: int,
                    max_records: int) -> ShareFetchResult:
        self._ensure_timer()
        self._seen(group_id, member_id, epoch)
        result = ShareFetchResult(lock_timeout_ms=self.group_config(group_id).record_lock_duration_ms)
        session = self.manager.sessions.get(group_id, member_id)
        wanted = set(requested) | set(acks) | (session.partitions if session is not None and epoch else set())
        led = self._led(wanted, result)
        await self._load(group_id, led, max(max_wait_ms, LOAD_WAIT_MIN_MS))
        reads: dict[TopicPartition, _Read] = {}
        await self._prefetch_remote(group_id, led, max_bytes, reads)
        outcome = self.manager.fetch(group_id, member_id, epoch, requested, forgotten, acks,
                                     self._log_end(group_id, led, max_bytes, reads), max(max_records, 1),
                                     self._clock_ms())
        if outcome.error:
            result.error = outcome.error
            return result
        self._released_if(epoch == FINAL_EPOCH or epoch == 0)
        for tp, code in outcome.acknowledge_errors.items():
            result.at(tp).acknowledge_error = code
        got = self._deliver(group_id, member_id, outcome.acquired, reads, result)
        if not got and max_wait_ms > 0 and epoch != FINAL_EPOCH and not result.error:
            await self._long_poll(group_id, member_id, led, max_wait_ms, max_bytes, max(max_records, 1), result)
        await self._persist_all(group_id, led | set(acks), result, acks)
        return result

    def _seen(self, group_id: str, member_id: str, epoch: int) -> None:
        if epoch == FINAL_EPOCH:
            self._last_seen.pop((group_id, member_id), None)
        else:
            self._last_seen[(group_id, member_id)] = self._clock_ms()

    def _led(self, tps: Iterable[TopicPartition], result: ShareFetchResult) -> set[TopicPartition]:
        """The partitions of ``tps`` led here; the others get their error in ``result``."""
        led = set()
        image = self._image_fn()
        for tp in tps:
            info = image.topic_by_id(tp[0])
            if info is None:
                result.at(tp).error = ErrorCode.UNKNOWN_TOPIC_ID
                continue
            part = self._replicas.get(info.name, tp[1])
            if part is None or not part.is_leader:
                known = 0 <= tp[1] < len(info.partitions)
                result.at(tp).error = ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            led.add(tp)
        return led

    def _partition(self, tp: TopicPartition):
        info = self._image_fn().topic_by_id(tp[0])
        part = self._replicas.get(info.name, tp[1]) if info is not None else None
        return part if part is not None and part.is_leader else None

    async def _long_poll(self, group_id: str, member_id: str, led: set[TopicPartition], max_wait_ms: int,
                         max_bytes: int, max_records: int, result: ShareFetchResult) -> None:
        deadline = self._clock_ms() + max_wait_ms
        keys = [p.key for tp in led if (p := self._partition(tp)) is not None]
        while (left := deadline - self._clock_ms()) > 0:
            released = self._released
            data = asyncio.ensure_future(self._replicas.fetch_purgatory.wait(keys, left / 1000))
            freed = asyncio.ensure_future(released.wait())
            await asyncio.wait((data, freed), return_when=asyncio.FIRST_COMPLETED)
            data.cancel()
            freed.cancel()
            reads: dict[TopicPartition, _Read] = {}
            await self._prefetch_remote(group_id, led, max_bytes, reads)
            acquired = self.manager.acquire(group_id, member_id, self._log_end(group_id, led, max_bytes, reads),
                                            max_records, self._clock_ms())
            if self._deliver(group_id, member_id, acquired, reads, result):
                return

    # -- reading the log ---------------------------------------------------------------------------------
    def _log_end(self, group_id: str, led: set[TopicPartition], max_bytes: int,
                 reads: dict[TopicPartition, _Read]) -> Callable[[TopicPartition], int]:
        """The manager's bound for acquisition: each led partition read (local log) at its next fetch
        offset, within what is left of ``max_bytes``; acquisition stays within what was read."""
        budget = [max_bytes]
        read_committed = self._read_committed(group_id)

        def log_end(tp: TopicPartition) -> int:
            share = self.manager.get(group_id, tp)
            part = self._partition(tp) if tp in led else None
            if share is None or part is None:
                return 0
            read = reads.get(tp)
            if read is None:
                read = reads[tp] = self._read_local(part, share.next_fetch_offset(),
                                                    max(min(budget[0], SHARE_READ_BYTES_MAX), 1), read_committed)
            budget[0] -= len(read.records)
            return read.end
        return log_end

    def _read_local(self, part, offset: int, max_bytes: int, read_committed: bool) -> _Read:
        isolation = FetchIsolation.TXN_COMMITTED if read_committed else FetchIsolation.HIGH_WATERMARK
        read = _Read(offset, end=offset)
        if offset >= part.max_offset(isolation) or offset < part.local_log_start_offset:
            return read
        got = part.read(offset, max_bytes, isolation, min_one_batch=True)
        if got.error or not got.size:
            return read
        read.records = b"".join(region.read() for region in got.parts)
        read.aborted = [(a.producer_id, a.first_offset, a.last_offset) for a in got.aborted]
        read.end = min(covered_end(read.records) or offset, part.max_offset(isolation))
        return read

    async def _prefetch_remote(self, group_id: str, led: set[TopicPartition], max_bytes: int,
                               reads: dict[TopicPartition, _Read]) -> None:
        """KIP-405: partitions whose next fetch offset is below the local log start are read from remote storage."""
        if self._remote is None:
            return
        read_committed = self._read_committed(group_id)
        for tp in led:
            share, part = self.manager.get(group_id, tp), self._partition(tp)
            if share is None or part is None or not part.tiered:
                continue
            offset = share.next_fetch_offset()
            if offset >= part.local_log_start_offset or offset < part.log_start_offset:
                continue
            answer = await self._remote.reader.read(part, offset, min(max_bytes, SHARE_READ_BYTES_MAX), True,
                                                    read_committed=read_committed)
            read = reads[tp] = _Read(offset, end=offset)
            if not answer.error and answer.records:
                read.records = bytes(answer.records)
                read.aborted = [(a.producer_id, a.first_offset, a.last_offset) for a in answer.aborted or ()]
                read.end = covered_end(read.records) or offset

    def _deliver(self, group_id: str, member_id: str, acquired: Mapping[TopicPartition, list[Acquired]],
                 reads: Mapping[TopicPartition, _Read], result: ShareFetchResult) -> bool:
        """Put what was acquired into ``result``, archiving the offsets that are no records; True: some records."""
        got = False
        now = self._clock_ms()
        for tp, runs in acquired.items():
            read = reads.get(tp)
            chosen = select(read.records if read else b"", runs, read.aborted if read else ())
            share = self.manager.get(group_id, tp)
            if chosen.gaps and share is not None:
                share.acknowledge(member_id, [(f, last, [AcknowledgeType.GAP]) for f, last in chosen.gaps], now)
            if chosen.acquired:
                answer = result.at(tp)
                answer.records, answer.acquired = chosen.records, chosen.acquired
                self.metrics.acquired(chosen.acquired, group_id)
                got = True
        if acquired:
            self._timer_wake.set()
        return got

    # -- loading --------------------------------------------------------------------------------------------
    async def _load(self, group_id: str, led: set[TopicPartition], wait_ms: int) -> None:
        tasks = []
        for tp in led:
            part = self._partition(tp)
            share = self.manager.get(group_id, tp)
            if share is not None and part is not None and share.leader_epoch != part.leader_epoch:
                self.manager.drop(SharePartitionKey(group_id, *tp))     # led again since: read it again
            key = SharePartitionKey(group_id, *tp)
            if part is None or self.manager.get(group_id, tp) is not None:
                continue
            task = self._loading.get(key)
            if task is None:
                task = self._loading[key] = asyncio.ensure_future(self._load_one(key, part))
                task.add_done_callback(self._loaded(key))
            tasks.append(task)
        if tasks:
            await asyncio.wait(tasks, timeout=wait_ms / 1000)

    def _loaded(self, key: SharePartitionKey) -> Callable[[asyncio.Task], None]:
        def done(_task: asyncio.Task) -> None:
            self._loading.pop(key, None)
        return done

    async def _load_one(self, key: SharePartitionKey, part) -> None:
        epoch = part.leader_epoch
        try:
            error, state = await self._persister.read(key, epoch)
            if error == _NEVER_INITIALIZED:
                error = await self._persister.initialize(key, 0, self._start_offset(key.group, part))
                if not error:
                    error, state = await self._persister.read(key, epoch)
        except Exception:
            log.exception("loading share-partition %s failed", key)
            return
        if error or state is None:
            log.info("share-partition %s not loaded: error %d", key, error)
            return
        if part.is_leader and part.leader_epoch == epoch and self.manager.get(key.group, (key.topic_id,
                                                                                         key.partition)) is None:
            start = max(state["StartOffset"], 0)
            self.manager.install(key, {**state, "StartOffset": start}, epoch, self.group_config(key.group))

    def _start_offset(self, group_id: str, part) -> int:
        """Where a new share-partition starts: share.auto.offset.reset (latest by default, as Kafka;
        earliest; by_duration:<ISO-8601>, KIP-1106: the first record at most that old, else the
        high watermark; the local log is searched)."""
        reset = self.group_values(group_id)[SHARE_AUTO_OFFSET_RESET]
        if reset == "earliest":
            return part.log_start_offset
        duration_ms = by_duration_ms(reset)
        if duration_ms is not None:
            found = part.offset_for_timestamp(self._clock_ms() - duration_ms)
            return min(found[0], part.high_watermark) if found is not None else part.high_watermark
        return part.high_watermark

    # -- ShareAcknowledge ---------------------------------------------------------------------------------------
    async def acknowledge(self, group_id: str, member_id: str, epoch: int, acks: AckBatches) -> ShareFetchResult:
        self._seen(group_id, member_id, epoch)
        result = ShareFetchResult(lock_timeout_ms=self.group_config(group_id).record_lock_duration_ms)
        led = self._led(acks, result)
        outcome = self.manager.acknowledge(group_id, member_id, epoch,
                                           {tp: b for tp, b in acks.items() if tp in led}, self._clock_ms())
        if outcome.error:
            result.error = outcome.error
            return result
        self._released_if(True)
        for tp, code in outcome.acknowledge_errors.items():
            result.at(tp).acknowledge_error = code
        await self._persist_all(group_id, led, result, acks)
        return result

    # -- writing to the share coordinator ----------------------------------------------------------------------
    async def _persist_all(self, group_id: str, tps: Iterable[TopicPartition], result: ShareFetchResult,
                           acks: AckBatches) -> None:
        keys = [SharePartitionKey(group_id, *tp) for tp in tps]
        errors = await asyncio.gather(*(self._persist(k) for k in keys))
        for key, error in zip(keys, errors, strict=True):
            tp = (key.topic_id, key.partition)
            if error and tp in acks and not result.at(tp).acknowledge_error:
                result.at(tp).acknowledge_error = _ack_error(error)

    async def _persist(self, key: SharePartitionKey) -> int:
        """Write what changed in ``key``'s share-partition; NONE when nothing did."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            share = self.manager.get(key.group, (key.topic_id, key.partition))
            if share is None:
                return ErrorCode.NONE
            await self._dead_letters(key, share)
            update = self._take(key, share)
            if update is None:
                return ErrorCode.NONE
            error = await self._persister.write(key, share.state_epoch, share.leader_epoch, update["StartOffset"],
                                                update["StateBatches"])
            if error == ErrorCode.FENCED_LEADER_EPOCH or error == ErrorCode.FENCED_STATE_EPOCH:
                self.manager.drop(key)      # another leader (or a reset) owns it now
            elif error:
                self._unsynced.add(key)
                self._timer_wake.set()
            return error

    async def _dead_letters(self, key: SharePartitionKey, share: SharePartition) -> None:
        """KIP-1191: copy what was archived as failed to the group's dead-letter topic, before the
        archiving is written (``share_dead_letters``)."""
        archived = share.take_archived()
        topic = self.group_values(key.group)[SHARE_DLQ_TOPIC] if archived else None
        part = self._partition((key.topic_id, key.partition)) if topic else None
        if topic and part is not None and self._dlq is not None:
            self.metrics.dead_letters(key.group, await self._dlq.send(key.group, topic, part, archived))

    def _take(self, key: SharePartitionKey, share: SharePartition) -> dict[str, Any] | None:
        if key in self._unsynced:       # a write failed: send the whole state, which holds every change since
            self._unsynced.discard(key)
            share.take_update()
            return share.snapshot()
        taken = self.manager.take_write(key)
        return taken[1] if taken is not None else None

    # -- timers and wake-ups -----------------------------------------------------------------------------------
    def _released_if(self, released: bool) -> None:
        if released:
            self._released.set()
            self._released = asyncio.Event()

    def _ensure_timer(self) -> None:
        if self._timer is None or self._timer.done():
            self._timer = asyncio.ensure_future(self._run_timer())

    async def _run_timer(self) -> None:
        """Release what outlived its acquisition lock, when it does; drop idle sessions; retry failed writes."""
        while True:
            deadline = self.manager.next_deadline_ms()
            timeout = None if deadline is None else max(deadline - self._clock_ms(), 0) / 1000
            if self._unsynced or self._last_seen:
                timeout = min(timeout if timeout is not None else TIMER_IDLE_S, TIMER_IDLE_S)
            self._timer_wake.clear()
            try:
                await asyncio.wait_for(self._timer_wake.wait(), timeout)
            except TimeoutError:
                pass
            try:
                await self._expire()
            except Exception:
                log.exception("share-partition timer round failed")

    async def _expire(self) -> None:
        now = self._clock_ms()
        released = self._drop_idle_sessions(now)
        expired = self.manager.expire_locks(now)
        for key, offsets in expired.items():
            self.metrics.lock_timeouts(key.group, len(offsets))
        self._released_if(bool(expired) or bool(released))
        for key in [*expired, *(k for k in (*self._unsynced, *released) if k not in expired)]:
            await self._persist(key)

    def _drop_idle_sessions(self, now: int) -> set[SharePartitionKey]:
        """Share sessions unused for ``idle_session_ms`` (longer than any member outlives its last
        heartbeat: a killed member's) are dropped and release what their member held; the
        share-partitions touched."""
        touched: set[SharePartitionKey] = set()
        for (group, member), seen in list(self._last_seen.items()):
            if now - seen < self.idle_session_ms:
                continue
            del self._last_seen[(group, member)]
            session = self.manager.sessions.get(group, member)
            if session is not None:
                touched.update(SharePartitionKey(group, *tp) for tp in session.partitions)
                self.manager.member_left(group, member)
        return touched

    def in_flight(self) -> dict[str, int]:
        """Offsets in flight by group (the metrics' gauge)."""
        counts: dict[str, int] = {}
        for key in self.manager.share_keys():
            share = self.manager.get(key.group, (key.topic_id, key.partition))
            if share is not None:
                counts[key.group] = counts.get(key.group, 0) + share.in_flight()
        return counts

    async def close(self) -> None:
        for task in [self._timer, *self._loading.values()]:
            if task is not None:
                task.cancel()
        self._persister.close()
        if self._dlq is not None:
            self._dlq.close()


def _ack_error(write_error: int) -> int:
    """A failed state write as an AcknowledgeErrorCode the client knows (retriable where it is)."""
    if write_error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.REQUEST_TIMED_OUT
    return ErrorCode.UNKNOWN_SERVER_ERROR
