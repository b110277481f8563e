"""The node's request memory pool (Kafka's ``queued.max.request.bytes``), sans-IO.

Every byte of a request frame a connection buffers, queued or being filled, is
reserved here until the request has been handled or the connection closes.
Reservations always succeed (the bytes are in hand or about to be read); what
the pool bounds is reading: while the pool is exhausted (``used >= capacity``)
no connection reads more, but one: the first frame that needs to grow past the
capacity may (``may_grow``; Kafka's non-strict pool likewise lets one
allocation exceed what is left), so a frame larger than what is left always
completes instead of every partial frame waiting for the others.  Memory is at
most the capacity plus that one frame (``socket.request.max.bytes``) and each
connection's receive buffer and first frame chunk.  A connection that
finds the pool exhausted waits (``wait``) and is handed back by ``release``
once memory is below the capacity again, as Kafka mutes channels while its
pool is out of memory.
"""
from __future__ import annotations

from collections.abc import Hashable

__all__ = ["MemoryPool"]


class MemoryPool:
    def __init__(self, capacity: int):
        assert capacity > 0, capacity
        self.capacity = capacity
        self.used = 0
        self._waiting: dict[Hashable, None] = {}     # insertion-ordered set: first come, first resumed
        self._overdraft: Hashable | None = None      # the one frame allowed to grow past the capacity

    @property
    def exhausted(self) -> bool:
        return self.used >= self.capacity

    def reserve(self, nbytes: int) -> None:
        assert nbytes >= 0, nbytes
        self.used += nbytes

    def may_grow(self, owner: Hashable) -> bool:
        """Whether ``owner``'s frame buffer may grow now: below capacity, or it is (becomes) the one
        frame allowed past it."""
        if not self.exhausted:
            return True
        if self._overdraft is None:
            self._overdraft = owner
        return self._overdraft == owner

    def end_overdraft(self, owner: Hashable) -> None:
        """``owner``'s frame is complete (or gone): the next frame may take the overdraft."""
        if self._overdraft == owner:
            self._overdraft = None

    def wait(self, waiter: Hashable) -> None:
        """``waiter`` stopped reading until the pool has room again."""
        self._waiting[waiter] = None

    def forget(self, waiter: Hashable) -> None:
        self._waiting.pop(waiter, None)
        self.end_overdraft(waiter)

    def release(self, nbytes: int) -> list:
        """Give back ``nbytes``; the waiters to resume when the pool has room again (then none wait)."""
        assert 0 <= nbytes <= self.used, (nbytes, self.used)
        self.used -= nbytes
        if self.exhausted or not self._waiting:
            return []
        resumed, self._waiting = list(self._waiting), {}
        return resumed
