"""Telling the controller which log dir hosts each replica (KIP-858, Kafka's AssignmentsManager).

``DirAssignments`` is the sans-IO core: ``observe`` compares where a hosted
partition's log really is with the dir the metadata image records for this
broker's replica and queues an assignment when they differ (a new replica on a
broker with several dirs is UNASSIGNED until then); ``next_request`` takes up to
``MAX_ASSIGNMENTS_PER_REQUEST`` (2250, Kafka's) queued assignments that the
image does not show yet into one AssignReplicasToDirs (73) request, at most one
in flight; ``handle_response`` / ``handle_failure`` requeue what failed and
back off exponentially (100 ms doubling up to 10 s, Kafka's STANDARD_BACKOFF).
An assignment is dropped once the image shows it, or when the partition or
this broker's replica is gone.

A replica whose dir failed keeps its queued assignment: sent to an offline dir,
it tells the controller to take that replica offline (``directory_control``).

``DirAssignmentSender`` is the asyncio shell: it drains the core through the
controller channel whenever something is queued.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tierlog.net.tasks import TaskSet
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

__all__ = ["MAX_ASSIGNMENTS_PER_REQUEST", "DirAssignmentSender", "DirAssignments"]

log = logging.getLogger(__name__)
MAX_ASSIGNMENTS_PER_REQUEST = 2250
BACKOFF_MS, BACKOFF_MAX_MS = 100, 10_000
Key = tuple[bytes, int]         # (topic id, partition)


class DirAssignments:
    def __init__(self, node_id: int):
        self.node_id = node_id
        self._queued: dict[Key, bytes] = {}             # partition -> dir id to assign
        self._in_flight: dict[Key, bytes] | None = None
        self._failures = 0
        self._next_send_ms = 0

    def observe(self, topic_id: bytes, p, dir_id: bytes) -> bool:
        """``p`` (a PartitionInfo of the image) is hosted here in ``dir_id``: queue an assignment if the
        image says otherwise.  True when something was queued."""
        key = (topic_id, p.partition)
        if p.directory(self.node_id) == dir_id:
            self._queued.pop(key, None)
            return False
        self._queued[key] = dir_id
        return True

    @property
    def queued(self) -> int:
        return len(self._queued)

    def next_deadline_ms(self) -> int | None:
        """When ``next_request`` may return a request (None: nothing queued, or one in flight)."""
        if self._in_flight is not None or not self._queued:
            return None
        return self._next_send_ms

    def next_request(self, image, broker_epoch: int, now_ms: int) -> dict | None:
        if self._in_flight is not None or not self._queued or now_ms < self._next_send_ms:
            return None
        batch: dict[Key, bytes] = {}
        for key in list(self._queued):
            if len(batch) >= MAX_ASSIGNMENTS_PER_REQUEST:
                break
            dir_id = self._queued.pop(key)
            if self._still_needed(image, key, dir_id):
                batch[key] = dir_id
        if not batch:
            return None
        self._in_flight = batch
        return _request(self.node_id, broker_epoch, batch)

    def _still_needed(self, image, key: Key, dir_id: bytes) -> bool:
        topic = image.topic_by_id(key[0])
        if topic is None or key[1] >= len(topic.partitions):
            return False
        p = topic.partitions[key[1]]
        return self.node_id in p.replicas and p.directory(self.node_id) != dir_id

    def handle_response(self, response: dict, now_ms: int) -> None:
        sent, self._in_flight = self._in_flight or {}, None
        if response.get("ErrorCode", ErrorCode.NONE) != ErrorCode.NONE:
            log.warning("AssignReplicasToDirs of %d partitions failed: error %d; retrying",
                        len(sent), response["ErrorCode"])
            self._requeue(sent, now_ms)
            return
        failed = dict(sent)
        for d in response.get("Directories", ()):
            for t in d["Topics"]:
                for p in t["Partitions"]:
                    key = (bytes(t["TopicId"]), p["PartitionIndex"])
                    if p["ErrorCode"] == ErrorCode.NONE or p["ErrorCode"] in _GIVE_UP:
                        failed.pop(key, None)
        self._failures = 0
        if failed:
            self._requeue(failed, now_ms)

    def handle_failure(self, now_ms: int) -> None:
        """No answer (no controller, timeout): everything sent is queued again, after a backoff."""
        sent, self._in_flight = self._in_flight or {}, None
        self._requeue(sent, now_ms)

    def _requeue(self, sent: dict[Key, bytes], now_ms: int) -> None:
        for key, dir_id in sent.items():
            self._queued.setdefault(key, dir_id)        # a newer observation wins
        self._next_send_ms = now_ms + min(BACKOFF_MAX_MS, BACKOFF_MS * 2 ** min(self._failures, 16))
        self._failures += 1


# the partition or our replica of it is gone: nothing to assign any more
_GIVE_UP = (ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER)


def _request(node_id: int, broker_epoch: int, batch: dict[Key, bytes]) -> dict:
    by_dir: dict[bytes, dict[bytes, list[int]]] = {}
    for (topic_id, index), dir_id in batch.items():
        by_dir.setdefault(dir_id, {}).setdefault(topic_id, []).append(index)
    return {"BrokerId": node_id, "BrokerEpoch": broker_epoch, "Directories": [
        {"Id": dir_id, "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": i} for i in sorted(parts)]}
                                  for tid, parts in topics.items()]}
        for dir_id, topics in by_dir.items()]}


class DirAssignmentSender:
    """Sends what ``DirAssignments`` queues, one request at a time, while anything is queued."""

    def __init__(self, core: DirAssignments, channel, image_fn: Callable, broker_epoch: Callable[[], int],
                 clock_ms: Callable[[], int], timeout_s: float, tasks: TaskSet):
        self.core = core
        self._channel = channel
        self._image_fn = image_fn
        self._broker_epoch = broker_epoch
        self._clock_ms = clock_ms
        self._timeout_s = timeout_s
        self._tasks = tasks
        self._running = False

    def kick(self) -> None:
        """Something was queued: make sure the drain runs."""
        if not self._running and self.core.queued:
            self._running = True
            self._tasks.spawn(self._drain(), name=f"dir-assignments-{self.core.node_id}")

    async def _drain(self) -> None:
        try:
            while (deadline := self.core.next_deadline_ms()) is not None:
                now = self._clock_ms()
                if deadline > now:
                    await asyncio.sleep((deadline - now) / 1000)
                    continue
                request = self.core.next_request(self._image_fn(), self._broker_epoch(), now)
                if request is not None:
                    await self._send(request)
        finally:
            self._running = False

    async def _send(self, request: dict) -> None:
        try:
            resp = await self._channel.send(ApiKey.ASSIGN_REPLICAS_TO_DIRS, request, self._timeout_s, 0)
        except Exception as e:     # noqa: BLE001 - no answer: retried after a backoff
            log.debug("AssignReplicasToDirs failed: %s", e)
            self.core.handle_failure(self._clock_ms())
            return
        self.core.handle_response(resp, self._clock_ms())
