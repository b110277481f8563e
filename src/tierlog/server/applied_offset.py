"""AppliedOffset: how far this node has applied the metadata log, and who waits for it.

The node's CommitApplier advances it after every committed item it applied; the
controller's requests wait on it (ControllerServer), so a response leaves once its
records are committed and applied here. Event-loop only.
"""
from __future__ import annotations

import asyncio
import heapq

__all__ = ["AppliedOffset", "NotLeaderAnymore"]


class NotLeaderAnymore(Exception):
    """Records proposed by this replica may not commit: it lost the leadership."""


class AppliedOffset:
    """The offset below which this node has applied the metadata log, and who waits for it.

    Event-loop only: ``CommitApplier`` advances it, the controller's requests wait on it.
    """

    def __init__(self) -> None:
        self.value = 0
        self._waiters: list[tuple[int, int, asyncio.Future]] = []     # heap of (offset, seq, future)
        self._seq = 0

    def advance(self, next_offset: int) -> None:
        """Everything below ``next_offset`` is applied: release who waited for it."""
        self.value = max(self.value, next_offset)
        while self._waiters and self._waiters[0][0] < self.value:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)

    async def wait(self, offset: int, timeout_s: float) -> None:
        """Until ``offset`` (inclusive) is applied; TimeoutError, or the exception of ``fail_waiting``."""
        if offset < self.value:
            return
        fut = asyncio.get_running_loop().create_future()
        self._seq += 1
        heapq.heappush(self._waiters, (offset, self._seq, fut))
        await asyncio.wait_for(fut, timeout_s)

    def fail_waiting(self, exc: Exception) -> None:
        """Every waiter not released yet gets ``exc``."""
        waiters, self._waiters = self._waiters, []
        for _, _, fut in waiters:
            if not fut.done():
                fut.set_exception(exc)
