"""AlterPartition requests to the controller, batched the way Kafka's AlterPartitionManager does.

Leaders propose ISR changes and KIP-1303 reports one partition at a time. Sent one
request per partition, a round of elections that makes this broker the leader of
N partitions costs N requests, which the controller answers one after another on
this broker's channel, each after its own Raft commit. Here:

- ``send(item)`` queues the item and returns the partition's answer (its entry of
  the response, or the response's top-level error) when it comes;
- at most one request is in flight; it carries every item queued meanwhile, so the
  controller commits them together;
- a partition has at most one queued item: a newer one replaces the older, whose
  sender gets OPERATION_NOT_ATTEMPTED (its LeaderState is gone or moved on);
- a failed request (timeout, lost connection) fails every item it carried; each
  LeaderState retries after its own backoff.

``propose(part, item, apply)`` is what a leader's update calls: it sends the partition's item and
hands the controller's answer to the partition (``Partition.on_alter_partition_response``, or
``on_alter_partition_failure`` when the request failed), then what that changed to ``apply``;
accepted shrinks and expands are counted (``isr_changes``: IsrShrinksPerSec / IsrExpandsPerSec).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from tierlog.net.tasks import TaskSet
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    ALTER_PARTITION_VERSION,
    AlterPartitionItem,
    build_alter_partition_request,
)

if TYPE_CHECKING:
    from .partition import Partition, PartitionUpdate

__all__ = ["AlterPartitionSender"]

log = logging.getLogger(__name__)

PartitionKey = tuple[bytes, int]


class AlterPartitionSender:
    def __init__(self, channel, node_id: int, broker_epoch: Callable[[], int], timeout_s: float, tasks: TaskSet,
                 clock_ms: Callable[[], int] = lambda: 0):
        self._channel = channel
        self._node_id = node_id
        self._broker_epoch = broker_epoch
        self._timeout_s = timeout_s
        self._tasks = tasks
        self._clock_ms = clock_ms
        self._queued: dict[PartitionKey, tuple[AlterPartitionItem, asyncio.Future]] = {}
        self._sending = False
        self.isr_changes = {"shrink": 0, "expand": 0}   # accepted AlterPartitions (IsrShrinks/ExpandsPerSec)

    def propose(self, part: Partition, item: AlterPartitionItem,
                apply: Callable[[Partition, PartitionUpdate], None]) -> None:
        """Send ``part``'s ``item``; the partition takes the answer and ``apply`` what it changed."""
        self._tasks.spawn(self._propose(part, item, apply), name=f"alter-partition-{part.topic}-{part.index}")

    async def _propose(self, part: Partition, item: AlterPartitionItem,
                       apply: Callable[[Partition, PartitionUpdate], None]) -> None:
        log.info("%s-%d: AlterPartition %s isr %s", part.topic, part.index, item.reason, list(item.isr_ids))
        try:
            error, answer = await self.send(item)
        except Exception as e:     # noqa: BLE001 - any failure: retry after a backoff
            log.info("%s-%d: AlterPartition failed: %s", part.topic, part.index, e)
            part.on_alter_partition_failure(item, self._clock_ms())
            return
        if error == ErrorCode.NONE and item.reason in self.isr_changes:
            self.isr_changes[item.reason] += 1
        upd = part.on_alter_partition_response(item, error, answer.get("LeaderEpoch", -1),
                                               answer.get("PartitionEpoch", -1), tuple(answer.get("Isr", ())),
                                               self._clock_ms())
        if upd is not None:
            apply(part, upd)

    async def send(self, item: AlterPartitionItem) -> tuple[int, dict]:
        """(error code, the partition's answer dict) for ``item``; raises what the request raised."""
        key = (item.topic_id, item.partition)
        replaced = self._queued.pop(key, None)
        if replaced is not None and not replaced[1].done():
            replaced[1].set_result((ErrorCode.OPERATION_NOT_ATTEMPTED, {}))
        fut = asyncio.get_running_loop().create_future()
        self._queued[key] = (item, fut)
        if not self._sending:
            self._sending = True
            self._tasks.spawn(self._drain(), name=f"alter-partition-{self._node_id}")
        return await fut

    async def _drain(self) -> None:
        try:
            while self._queued:
                batch, self._queued = self._queued, {}
                await self._send_batch(batch)
        finally:
            self._sending = False

    async def _send_batch(self, batch: dict[PartitionKey, tuple[AlterPartitionItem, asyncio.Future]]) -> None:
        body = build_alter_partition_request(self._node_id, self._broker_epoch(), [i for i, _ in batch.values()])
        try:
            resp = await self._channel.send(ApiKey.ALTER_PARTITION, body, self._timeout_s, ALTER_PARTITION_VERSION)
        except Exception as e:     # noqa: BLE001 - every item fails; its leader retries after a backoff
            for _, fut in batch.values():
                if not fut.done():
                    fut.set_exception(e)
            return
        for key, (_, fut) in batch.items():
            if not fut.done():
                fut.set_result(_answer_for(resp, key))


def _answer_for(resp: dict, key: PartitionKey) -> tuple[int, dict]:
    error = resp.get("ErrorCode", ErrorCode.NONE)
    if error:
        return error, {}
    for t in resp.get("Topics", ()):
        if t.get("TopicId") != key[0]:
            continue
        for pr in t.get("Partitions", ()):
            if pr["PartitionIndex"] == key[1]:
                return pr.get("ErrorCode", ErrorCode.NONE), pr
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, {}
