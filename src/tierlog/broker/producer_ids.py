"""Producer ids for idempotent producers (InitProducerId), handed out from durable blocks.

Blocks of ids are reserved by the controller (AllocateProducerIds, a committed
ProducerIdsRecord) before any id of them is used, so an id is never given
twice, across restarts and brokers included.  One allocation is in flight at a
time; concurrent callers wait for it.
"""
from __future__ import annotations

import asyncio

__all__ = ["BLOCK_SIZE", "MAX_EPOCH", "ProducerIdManager"]

BLOCK_SIZE = 1000
MAX_EPOCH = 32767


class ProducerIdManager:
    def __init__(self, allocate_block):
        self._allocate_block = allocate_block       # async () -> range
        self._block = range(0)
        self._next = 0
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next >= self._block.stop:
                self._block = await self._allocate_block()
                self._next = self._block.start
            pid = self._next
            self._next += 1
            return pid

    async def init(self, producer_id: int, producer_epoch: int) -> tuple[int, int]:
        """A fresh (id, 0), or the same id with the next epoch when a producer re-initialises (KIP-360)."""
        if producer_id >= 0 and 0 <= producer_epoch < MAX_EPOCH:
            return producer_id, producer_epoch + 1
        return await self.next_id(), 0
