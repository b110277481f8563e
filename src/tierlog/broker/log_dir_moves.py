"""Moving replicas between this broker's log dirs while they serve (AlterReplicaLogDirs, KIP-113).

``alter(topic, partition, path)`` applies Kafka's rules and answers an error code:
LOG_DIR_NOT_FOUND for a path that is not one of the broker's log dirs,
KAFKA_STORAGE_ERROR for an offline one (or a partition offline with its dir),
REPLICA_NOT_AVAILABLE for a partition this broker does not host; a move to the
dir the replica is in already cancels a move under way; a move to another dir
replaces the one under way.  Otherwise the log manager opens a future log in the
target dir and the partition takes it (``Partition.start_future``).

The copier task (Kafka's ReplicaAlterLogDirsThread) runs while moves are under
way: each step copies up to ``COPY_BYTES_PER_STEP`` of a partition's current log
into its future log (``Partition.copy_to_future``) and yields to the event loop;
a step that catches up swaps at once (``Partition.swap_future``: nothing can be
appended between the two, they run in one event-loop step), and the controller
is told the replica's new directory (AssignReplicasToDirs).  A partition no
longer hosted, a log dir failure of either side (the log manager drops the
future log) or a storage error aborts the move.  A move under way at shutdown resumes
when the partition is hosted again (``resume``: the log manager loaded its
future log).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from tierlog.net.tasks import TaskSet
from tierlog.protocol.errors import ErrorCode
from tierlog.storage import KafkaStorageError, LogManager

if TYPE_CHECKING:
    from .partition import Partition

__all__ = ["COPY_BYTES_PER_STEP", "LogDirMoves"]

log = logging.getLogger(__name__)
COPY_BYTES_PER_STEP = 1024 * 1024       # Kafka's replica.fetch.max.bytes default, the alter-log-dirs fetch size
Key = tuple[str, int]


class LogDirMoves:
    def __init__(self, logs: LogManager, partition_of: Callable[[str, int], Partition | None],
                 on_moved: Callable[[Key], None], clock_ms: Callable[[], int], tasks: TaskSet):
        """``partition_of``: the hosted partition; ``on_moved(key)``: its log is in a new dir (tell the
        controller)."""
        self._logs = logs
        self._partition_of = partition_of
        self._on_moved = on_moved
        self._clock_ms = clock_ms
        self._tasks = tasks
        self._moving: set[Key] = set()
        self._running = False

    @property
    def moving(self) -> frozenset[Key]:
        return frozenset(self._moving)

    def alter(self, topic: str, index: int, path: str) -> int:
        """Start (or cancel, or redirect) moving the replica of ``topic``-``index`` to log dir ``path``."""
        try:
            target = self._logs.online_dir(path)
        except KafkaStorageError:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if target is None:
            return ErrorCode.LOG_DIR_NOT_FOUND
        part = self._partition_of(topic, index)
        if part is None:
            return ErrorCode.REPLICA_NOT_AVAILABLE
        if part.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if self._logs.log_dir_of(topic, index) == target:
            self._cancel(part, "asked to stay in its log dir")
            return ErrorCode.NONE
        try:
            future = self._logs.create_future(topic, index, target, self._clock_ms())
        except KafkaStorageError as e:
            log.error("%s-%d: cannot start moving to %s: %s", topic, index, target, e)
            return ErrorCode.KAFKA_STORAGE_ERROR
        if part.future is not future:
            log.info("%s-%d: moving from %s to %s", topic, index, self._logs.log_dir_of(topic, index), target)
        self._start(part, future)
        return ErrorCode.NONE

    def resume(self, part: Partition) -> None:
        """A partition just hosted whose future log was loaded at start (a move under way at shutdown)
        goes on filling it."""
        future = self._logs.future_of(*part.key)
        if future is not None and part.future is not future:
            self._start(part, future)

    def _start(self, part: Partition, future) -> None:
        part.start_future(future)
        self._moving.add(part.key)
        if not self._running:
            self._running = True
            self._tasks.spawn(self._copy_all(), name="log-dir-moves")

    def _cancel(self, part: Partition, why: str) -> None:
        if part.future is not None or part.key in self._moving:
            log.info("%s-%d: log dir move cancelled: %s", part.topic, part.index, why)
        part.drop_future()
        self._logs.abort_future(*part.key)
        self._moving.discard(part.key)

    async def _copy_all(self) -> None:
        try:
            while self._moving:
                for key in list(self._moving):
                    self.step(key)
                    await asyncio.sleep(0)          # produce and fetch go on between steps
        finally:
            self._running = False

    def step(self, key: Key) -> None:
        """Copy one step of ``key``'s move; swap when it has caught up; drop a move that cannot go on."""
        part = self._partition_of(*key)
        future = self._logs.future_of(*key)
        if part is None or part.offline or future is None or part.future is not future:
            if part is not None:
                part.drop_future()
            self._logs.abort_future(*key)
            self._moving.discard(key)
            log.warning("%s-%d: log dir move aborted (the replica or a log dir is gone)", *key)
            return
        try:
            if part.copy_to_future(COPY_BYTES_PER_STEP, self._clock_ms()):
                target = self._logs.future_dir_of(*key)
                part.swap_future(lambda: self._logs.replace_current_with_future(*key))
                self._moving.discard(key)
                log.info("%s-%d: now in log dir %s (offsets up to %d copied)", *key, target, part.log_end_offset)
                self._on_moved(key)
        except KafkaStorageError as e:
            log.error("%s-%d: log dir move failed: %s", *key, e)
            self._logs.take_failed_offline()
            self._cancel(part, str(e))
        except Exception as e:      # a bug must not leave the move hanging: it is dropped
            log.exception("%s-%d: log dir move failed", *key)
            self._cancel(part, str(e))
