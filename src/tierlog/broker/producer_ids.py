"""Producer ids for idempotent producers (InitProducerId), handed out from durable blocks.

Blocks of ``BLOCK_SIZE`` ids are reserved through the metadata store before any
id of them is used, so an id is never given twice, across restarts included.
"""
from __future__ import annotations

__all__ = ["ProducerIdManager", "BLOCK_SIZE", "MAX_EPOCH"]

BLOCK_SIZE = 1000
MAX_EPOCH = 32767


class ProducerIdManager:
    def __init__(self, allocate_block):
        self._allocate_block = allocate_block
        self._block = range(0)
        self._next = 0

    def next_id(self) -> int:
        if self._next >= self._block.stop:
            self._block = self._allocate_block(BLOCK_SIZE)
            self._next = self._block.start
        pid = self._next
        self._next += 1
        return pid

    def init(self, producer_id: int, producer_epoch: int) -> tuple[int, int]:
        """A fresh (id, 0), or the same id with the next epoch when a producer re-initialises (KIP-360)."""
        if producer_id >= 0 and 0 <= producer_epoch < MAX_EPOCH:
            return producer_id, producer_epoch + 1
        return self.next_id(), 0
