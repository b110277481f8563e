"""Requests to other nodes grouped per node: one request in flight to a node at a time, and the
next one carries everything queued for that node meanwhile (at most ``max_items``), as Kafka's
inter-broker send threads drain their per-broker queues (the transaction markers'
``TransactionMarkerChannelManager``, the leaders' ``AddPartitionsToTxnManager``).

The caller submits an item for a node and awaits its own result. ``send(node, items)`` makes one
request of the items and answers one result per item, in order; whatever it does not answer (an
exception, a short list, a cancelled drain on close) gets ``unanswered``, so no submitter waits
forever. Under load the batches grow by themselves: nothing waits on a timer.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, NamedTuple, TypeVar

__all__ = ["NodeBatches"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class _Queued(NamedTuple, Generic[T, R]):
    item: T
    done: asyncio.Future[R]


class NodeBatches(Generic[T, R]):
    def __init__(self, send: Callable[[int, list[T]], Awaitable[list[R]]], unanswered: R,
                 max_items: int, name: str):
        self._send = send
        self._unanswered = unanswered
        self._max_items = max_items
        self._name = name
        self._queues: dict[int, list[_Queued[T, R]]] = {}      # node -> items waiting for its next request
        self._drains: dict[int, asyncio.Task] = {}              # node -> the task sending to it

    def submit(self, node: int, item: T) -> asyncio.Future[R]:
        """The future of ``item``'s result; the node's drain task sends it with whatever else is queued."""
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(node, []).append(_Queued(item, done))
        if node not in self._drains:
            self._drains[node] = asyncio.get_running_loop().create_task(self._drain(node),
                                                                        name=f"{self._name}-to-{node}")
        return done

    async def _drain(self, node: int) -> None:
        queue = self._queues[node]
        batch: list[_Queued[T, R]] = []
        try:
            while queue:
                batch = queue[:self._max_items]
                del queue[:self._max_items]
                results = await self._send(node, [q.item for q in batch])
                for q, result in zip(batch, results):
                    _settle(q, result)
                self._settle_all(batch)
        except Exception:                   # a bug in send: its submitters get ``unanswered``
            log.exception("%s: a request to node %d failed", self._name, node)
        finally:
            self._settle_all(batch + queue)     # cancelled (close) or failed
            del self._drains[node], self._queues[node]

    def _settle_all(self, queued: list[_Queued[T, R]]) -> None:
        for q in queued:
            _settle(q, self._unanswered)

    def close(self) -> None:
        for task in list(self._drains.values()):
            task.cancel()


def _settle(q: _Queued, result) -> None:
    if not q.done.done():
        q.done.set_result(result)
