"""The leaders' periodic work, visiting only partitions where something can change.

Every ``TICK_S`` a led partition's ``Partition.tick`` expires parked requests, shrinks or
expands the ISR, retries an AlterPartition and makes KIP-1303 reports due.  A leader is on the
*active* set while its tick can change something (anything happened to it since it was last
quiet: ``activate``, called for every update the replica manager applies); a quiet one leaves
the set.  Every led partition is still visited once per ``SWEEP_MS`` (a slice per tick,
``sweep.Sweep``) for the reports local retention makes due without an event.  So a tick costs
in proportion to the partitions that changed (DESIGN principle 13).

A led partition whose ISR lacks a replica is marked in the fetch sessions on each of its ticks
(``mark``, without waking): the follower's next fetch reads it again, so an ISR expand (once
the follower is unfenced, say) does not wait for an append.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from .partition import Partition, PartitionUpdate
from .sweep import Sweep

__all__ = ["SWEEP_MS", "TICK_S", "LeaderTicker"]

TICK_S = 0.2
SWEEP_MS = 30_000       # every led partition is ticked at least this often, quiet or not

Key = tuple[str, int]


class LeaderTicker:
    def __init__(self, partitions: Mapping[Key, Partition], apply: Callable[[Partition, PartitionUpdate], None],
                 mark: Callable[[Partition], None]):
        """``apply``: carry out what a tick changed; ``mark``: mark a partition in the fetch sessions."""
        self._partitions = partitions
        self._apply = apply
        self._mark = mark
        self._active: set[Key] = set()
        self._sweep: Sweep[Key] = Sweep(SWEEP_MS // int(TICK_S * 1000))

    def activate(self, key: Key) -> None:
        """Something happened to led partition ``key``: the next tick visits it."""
        self._active.add(key)

    @property
    def active(self) -> frozenset[Key]:
        return frozenset(self._active)

    def tick(self, now_ms: int) -> None:
        """Tick the active led partitions and a slice of the others."""
        for key in self._active.union(self._sweep.take(self._partitions)):
            part = self._partitions.get(key)
            if part is None or not part.is_leader or part.offline:     # offline: mark_offline is due
                self._active.discard(key)
                continue
            self._apply(part, part.tick(now_ms))
            if part.quiet:
                self._active.discard(key)
            elif not part.isr_complete:
                self._mark(part)        # a follower outside the ISR may join once its fetch is read again
