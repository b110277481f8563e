"""How far this broker has consumed one ``__remote_log_metadata`` partition.

``offset`` is the next offset to fetch. The partition is *ready* once a fetch
answered a high watermark and everything below it was consumed (Kafka's
TopicBasedRemoteLogMetadataManager: caught up with the end offset seen after
the assignment). ``wait_past`` lets a publisher wait until its own record was
applied.
"""

from __future__ import annotations

import asyncio

from tierlog.net.tasks import wait_until

__all__ = ["ConsumedPosition"]


class ConsumedPosition:
    def __init__(self) -> None:
        self.offset = 0
        self.ready = False
        self._changed = asyncio.Event()

    def restart(self) -> None:
        """Consume again from offset 0 (a newly assigned partition must see every record)."""
        self.offset, self.ready = 0, False

    def consumed(self, next_offset: int) -> None:
        if next_offset > self.offset:
            self.offset = next_offset
            self._changed.set()

    def fetched(self, high_watermark: int) -> None:
        """A fetch answered: everything below ``high_watermark`` consumed means ready."""
        if not self.ready and high_watermark >= 0 and self.offset >= high_watermark:
            self.ready = True
            self._changed.set()

    async def wait_past(self, offset: int, timeout_s: float) -> bool:
        """True once ``offset`` is consumed, False at the deadline."""
        return await wait_until(lambda: self.offset > offset, self._changed, timeout_s)
