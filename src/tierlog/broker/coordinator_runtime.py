"""One runtime for every coordinator that keeps its state in an internal compacted topic
(``__consumer_offsets``, ``__transaction_state``; Kafka's CoordinatorRuntime): a coordinator
built on it is only its rules, given to the runtime as a ``Coordinator``.

- Hosting: ``ReplicaManager``'s leadership listeners call ``on_leader`` / ``on_follower`` /
  ``on_stopped``; the runtime hosts a ``Hosted`` per partition of its topic this broker leads.
- Loading: becoming leader reads the partition's log from its start through the coordinator's
  ``Loader`` (``coordinator_log.load_log``); meanwhile ``locate`` answers
  COORDINATOR_LOAD_IN_PROGRESS.  Losing the partition drops it (``Coordinator.unloaded``, its
  timers cancelled); a key of a partition not hosted here answers ``coordinator_moving``.
- The lease: a partition is served only while ``Partition.leads`` the epoch it was loaded at
  (``leading``); a new epoch is a new load.  A slow check (``LEASE_CHECK_S``) drops a partition
  whose lease ended without a listener call.
- Writes (``write``): the records of the writes that arrive within the linger (0: one event-loop
  round) are appended as one batch (at most the partition's max.message.bytes) with acks=all
  through ``ReplicaManager.append_records``; once the high watermark passes it (or the write
  failed) ``Coordinator.written`` gets the batch's payloads with its error, in log order.  A
  write without records joins the round's batch, or follows the latest write still in flight
  (a read after a write completes when the write commits).  A producer's (transactional) write
  is a batch of its own, after the round's.  A write refused before the log fails its batch and,
  with ``reload_on_refused``, loads the partition again (the state already holds what it wrote).
- Timers (``schedule``, Kafka's CoordinatorTimer): one per key and partition, fired at its
  deadline (not by a periodic sweep) while the partition is loaded and led here.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from tierlog.net.tasks import TaskSet
from tierlog.protocol.errors import ErrorCode
from tierlog.records.header import HEADER_SIZE

from .coordinator_log import Appended, append, committed, coordinator_moving, load_log
from .partition import Partition

__all__ = ["LEASE_CHECK_S", "RECORD_OVERHEAD", "TOPIC_CREATE_RETRY_MS", "Coordinator", "CoordinatorRuntime",
           "Hosted", "Loader"]

log = logging.getLogger(__name__)

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)
Records = list[tuple[bytes, bytes | None]]

TOPIC_CREATE_RETRY_MS = 5000
LEASE_CHECK_S = 0.5
# a record's framing in a v2 batch at most: its varint length, offset delta, key and value lengths,
# attributes, headers count, and a zero timestamp delta (every record of a batch has the batch's now_ms)
RECORD_OVERHEAD = 24


class Loader(Protocol[S_co]):
    """Builds a partition's state from its log."""

    def replay(self, header: Any, records: list) -> None: ...

    def finish(self, now_ms: int) -> S_co: ...


@dataclass(eq=False)
class Hosted(Generic[S]):
    """A partition of the runtime's topic this broker leads: its state once loaded."""
    part: Partition
    epoch: int                                          # the lease: led at this leader epoch
    local: Any                                          # the coordinator's own per-partition bookkeeping
    state: S | None = None                              # None while loading
    pending: _Batch | None = None                       # this round's writes, not appended yet
    last_append: asyncio.Task | None = None             # the latest write: writes without records wait for it
    timers: dict[object, asyncio.TimerHandle] = field(default_factory=dict)


class Coordinator(Protocol[S]):
    """What a coordinator gives its runtime: its rules around a partition's life."""

    def new_local(self) -> Any:
        """Fresh per-partition bookkeeping (``Hosted.local``), made at each load."""
        ...

    def loader(self, hosted: Hosted[S]) -> Loader[S]: ...

    def loaded(self, hosted: Hosted[S]) -> None:
        """``hosted.state`` is in: resume what the log says is under way, arm timers."""
        ...

    def unloaded(self, hosted: Hosted[S]) -> None:
        """The partition is no longer served here (waiting requests answer NOT_COORDINATOR)."""
        ...

    def written(self, hosted: Hosted[S], payloads: list, error: ErrorCode, end_offset: int | None,
                producer: tuple[int, int] | None) -> None:
        """A batch's writes ended: committed (NONE) or failed (``end_offset`` None: not in the log)."""
        ...


@dataclass
class _Batch:
    """The writes of one round to one partition: one append, one high-watermark wait.  At most
    ``max_bytes`` of keys and values (the partition's max.message.bytes), unless one write alone
    is larger."""
    max_bytes: int
    records: Records = field(default_factory=list)
    payloads: list = field(default_factory=list)
    size: int = HEADER_SIZE

    def add(self, records: Records, payload: object) -> bool:
        """Take a write (False: it does not fit; the batch must be written first)."""
        size = sum(len(k) + len(v or b"") + RECORD_OVERHEAD for k, v in records)
        if self.payloads and self.size + size > self.max_bytes:
            return False
        self.records += records
        self.payloads.append(payload)
        self.size += size
        return True


class CoordinatorRuntime(Generic[S]):
    def __init__(self, topic: str, coordinator: Coordinator[S], replicas, clock_ms: Callable[[], int], *,
                 node_id: int, write_timeout_ms: int, linger_ms: int = 0, reload_on_refused: bool = False,
                 image_leader: Callable[[str, int], int] = lambda topic, index: -1):
        self.topic = topic
        self._coordinator = coordinator
        self._replicas = replicas
        self._clock_ms = clock_ms
        self._node_id = node_id
        self._write_timeout_ms = write_timeout_ms
        self._linger_s = linger_ms / 1000
        self._reload_on_refused = reload_on_refused
        self._image_leader = image_leader           # (topic, partition) -> its leader in the newest image
        self._hosted: dict[int, Hosted[S]] = {}
        self._tasks = TaskSet(f"{topic} coordinator {node_id}")
        self._lease_checking = False
        self._last_topic_create_ms = -TOPIC_CREATE_RETRY_MS

    # -- hosting ---------------------------------------------------------------------------------
    def on_leader(self, part: Partition) -> None:
        if part.topic != self.topic:
            return
        self._drop(part.index)
        hosted: Hosted[S] = Hosted(part, part.leader_epoch, self._coordinator.new_local())
        self._hosted[part.index] = hosted
        self._tasks.spawn(self._load(hosted), name=f"{self.topic}-load-{part.index}")
        if not self._lease_checking:
            self._lease_checking = True
            self._tasks.spawn(self._lease_loop(), name=f"{self.topic}-lease")

    def on_follower(self, part: Partition) -> None:
        if part.topic == self.topic:
            self._drop(part.index)

    def on_stopped(self, part: Partition, topic_deleted: bool) -> None:
        if part.topic == self.topic:
            self._drop(part.index)

    def _drop(self, index: int) -> None:
        hosted = self._hosted.pop(index, None)
        if hosted is None:
            return
        log.info("%s-%d: no longer coordinating it", self.topic, index)
        for timer in hosted.timers.values():
            timer.cancel()
        hosted.timers.clear()
        self._coordinator.unloaded(hosted)

    def leading(self, hosted: Hosted[S]) -> bool:
        """The lease: ``hosted`` is still this partition's and the partition is led at its epoch."""
        return self._hosted.get(hosted.part.index) is hosted and hosted.part.leads(hosted.epoch)

    async def _load(self, hosted: Hosted[S]) -> None:
        loader = self._coordinator.loader(hosted)
        if await load_log(hosted.part, lambda: self.leading(hosted), loader.replay):
            hosted.state = loader.finish(self._clock_ms())
            log.info("%s-%d: loaded", self.topic, hosted.part.index)
            self._coordinator.loaded(hosted)

    def reload(self, hosted: Hosted[S]) -> None:
        """Load the partition again from its log (requests meanwhile: COORDINATOR_LOAD_IN_PROGRESS)."""
        log.info("%s-%d: reloading from the log", self.topic, hosted.part.index)
        self.on_leader(hosted.part)

    async def _lease_loop(self) -> None:
        while True:
            await asyncio.sleep(LEASE_CHECK_S)
            for index, hosted in list(self._hosted.items()):
                if not self.leading(hosted):
                    self._drop(index)

    # -- finding a partition -----------------------------------------------------------------------
    def locate(self, index: int) -> tuple[Hosted[S] | None, int]:
        """The loaded partition ``index`` served here, else the error its keys answer."""
        hosted = self._hosted.get(index)
        if hosted is None or not self.leading(hosted):
            return None, coordinator_moving(self._image_leader(self.topic, index), self._node_id)
        if hosted.state is None:
            return None, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return hosted, ErrorCode.NONE

    def hosted(self, index: int) -> Hosted[S] | None:
        """Partition ``index`` if hosted here, loaded or not."""
        return self._hosted.get(index)

    def states(self) -> tuple[list[S], bool]:
        """The states of the partitions loaded and led here, and whether any is still loading."""
        led = [h for h in self._hosted.values() if self.leading(h)]
        return [h.state for h in led if h.state is not None], any(h.state is None for h in led)

    def led(self) -> list[Hosted[S]]:
        """The loaded partitions led here."""
        return [h for h in self._hosted.values() if h.state is not None and self.leading(h)]

    def should_create_topic(self) -> bool:
        """At most one creation of the topic in flight per TOPIC_CREATE_RETRY_MS."""
        now = self._clock_ms()
        if now - self._last_topic_create_ms < TOPIC_CREATE_RETRY_MS:
            return False
        self._last_topic_create_ms = now
        return True

    # -- writes --------------------------------------------------------------------------------------
    def write(self, hosted: Hosted[S], records: Records, payload: object,
              producer: tuple[int, int] | None = None) -> None:
        """Write ``records`` in this round's batch; ``Coordinator.written`` gets ``payload`` once
        the batch is committed or failed.  ``producer`` (id, epoch): a transactional batch of that
        producer's, after the round's."""
        if producer is not None and records:
            self._flush(hosted, hosted.pending)
            self._append(hosted, records, [payload], producer)
            return
        if hosted.pending is None:
            if not records:
                self._after_last(hosted, payload)
                return
            batch = hosted.pending = _Batch(hosted.part.config.max_message_bytes)
            loop = asyncio.get_running_loop()
            if self._linger_s > 0:
                loop.call_later(self._linger_s, self._flush, hosted, batch)
            else:
                loop.call_soon(self._flush, hosted, batch)      # once this round's calls are in
        if not hosted.pending.add(records, payload):           # full: written now, this write opens the next
            self._flush(hosted, hosted.pending)
            self.write(hosted, records, payload)

    async def write_and_wait(self, hosted: Hosted[S], records: Records) -> ErrorCode:
        """``write`` and wait for its end: NONE once committed, else the error (a coordinator whose
        ``written`` resolves futures given as payloads)."""
        done: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.write(hosted, records, done)
        return await done

    def _after_last(self, hosted: Hosted[S], payload: object) -> None:
        """A write without records, none of this round's pending: done now, or after the latest write."""
        last = hosted.last_append
        if last is None or last.done():
            self._coordinator.written(hosted, [payload], ErrorCode.NONE, None, None)
        else:
            self.spawn(self._follow(hosted, last, payload), f"{self.topic}-follow-{hosted.part.index}")

    async def _follow(self, hosted: Hosted[S], last: asyncio.Task, payload: object) -> None:
        self._coordinator.written(hosted, [payload], await last, None, None)

    def _flush(self, hosted: Hosted[S], batch: _Batch | None) -> None:
        """Write ``batch`` if it is still the one being filled (a full one was written already) and
        the partition was not dropped while it lingered."""
        if batch is not None and hosted.pending is batch:
            hosted.pending = None
            if self._hosted.get(hosted.part.index) is hosted:
                self._append(hosted, batch.records, batch.payloads, None)
            else:
                self._coordinator.written(hosted, batch.payloads, ErrorCode.NOT_COORDINATOR, None, None)

    def _append(self, hosted: Hosted[S], records: Records, payloads: list, producer: tuple[int, int] | None) -> None:
        """Append now (log order is call order); a task hands the outcome on once committed."""
        appended = append(self._replicas, hosted.part, records, self._write_timeout_ms, self._clock_ms(),
                          lambda: self.leading(hosted), producer)
        if appended.error:
            log.info("%s-%d: write refused: %s", self.topic, hosted.part.index, appended.error.name)
            self._coordinator.written(hosted, payloads, appended.error, None, producer)
            if self._reload_on_refused and self.leading(hosted):
                self.reload(hosted)     # before a later write appends records made from what this one changed
            return
        hosted.last_append = self.spawn(self._complete(hosted, payloads, appended, hosted.last_append, producer),
                                        f"{self.topic}-append-{hosted.part.index}")

    async def _complete(self, hosted: Hosted[S], payloads: list, appended: Appended, previous: asyncio.Task | None,
                        producer: tuple[int, int] | None) -> ErrorCode:
        error = await committed(appended, lambda: self.leading(hosted))
        if previous is not None:
            await previous      # outcomes leave in log order; a write that committed needs nothing of earlier ones
        if error:
            log.info("%s-%d: write failed: %s", self.topic, hosted.part.index, error.name)
        self._coordinator.written(hosted, payloads, error, appended.end_offset, producer)
        return error

    # -- timers and tasks -------------------------------------------------------------------------
    def schedule(self, hosted: Hosted[S], key: object, deadline_ms: int | None, fire: Callable[[int], None]) -> None:
        """Run ``fire(now_ms)`` at ``deadline_ms`` by the runtime's clock (None: never), replacing
        the partition's timer of ``key``; only while the partition is loaded and led here."""
        delay_s = None if deadline_ms is None else max(0, deadline_ms - self._clock_ms()) / 1000
        self.schedule_in(hosted, key, delay_s, lambda now: self._due(hosted, key, deadline_ms, fire, now))

    def _due(self, hosted: Hosted[S], key: object, deadline_ms: int | None, fire: Callable[[int], None],
             now_ms: int) -> None:
        assert deadline_ms is not None, "a timer without a deadline is never armed"
        if now_ms < deadline_ms:        # the loop's clock ran ahead of the runtime's: not yet
            self.schedule(hosted, key, deadline_ms, fire)
        else:
            fire(now_ms)

    def schedule_in(self, hosted: Hosted[S], key: object, delay_s: float | None, fire: Callable[[int], None]) -> None:
        """``schedule`` by a delay in the event loop's time (a poll, not a deadline of the rules)."""
        old = hosted.timers.pop(key, None)
        if old is not None:
            old.cancel()
        if delay_s is None or self._hosted.get(hosted.part.index) is not hosted:
            return
        hosted.timers[key] = asyncio.get_running_loop().call_later(delay_s, self._fire, hosted, key, fire)

    def _fire(self, hosted: Hosted[S], key: object, fire: Callable[[int], None]) -> None:
        hosted.timers.pop(key, None)
        if hosted.state is None or not self.leading(hosted):
            return
        try:
            fire(self._clock_ms())
        except Exception:
            log.exception("%s-%d: timer %r failed", self.topic, hosted.part.index, key)

    def spawn(self, coro: Coroutine, name: str) -> asyncio.Task | None:
        """A task of the runtime's, cancelled at ``close`` (None: closed already)."""
        return self._tasks.spawn(coro, name=name)

    def every(self, interval_s: float, fn: Callable[[int], None], name: str) -> None:
        """Run ``fn(now_ms)`` every ``interval_s`` (a coordinator-wide chore: Kafka's periodic tasks)."""
        self.spawn(self._every(interval_s, fn), name)

    async def _every(self, interval_s: float, fn: Callable[[int], None]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                fn(self._clock_ms())
            except Exception:
                log.exception("%s coordinator %d: a periodic task failed", self.topic, self._node_id)

    async def close(self) -> None:
        for index in list(self._hosted):
            self._drop(index)
        await self._tasks.close()
