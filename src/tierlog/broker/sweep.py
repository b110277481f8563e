"""A slow sweep over a changing set of keys, a slice per tick (sans-IO).

Work that must reach every partition now and then (a KIP-1303 local-log report
after local retention, say) but that no event announces is spread over
``ticks`` calls: each ``take`` returns the next slice of a snapshot of the keys,
and a new snapshot starts when the last one is done.  A tick then costs
1/``ticks`` of a full pass instead of a full pass (DESIGN principle 13).
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["Sweep"]

K = TypeVar("K", bound=Hashable)


class Sweep(Generic[K]):
    def __init__(self, ticks: int):
        self.ticks = max(1, ticks)          # calls per full pass
        self._keys: list[K] = []
        self._pos = 0
        self._step = 0

    def take(self, keys: Iterable[K]) -> list[K]:
        """The next slice; ``keys`` (the current set) is read only when a new pass starts."""
        if self._pos >= len(self._keys):
            self._keys, self._pos = list(keys), 0
            self._step = -(-len(self._keys) // self.ticks)
        out = self._keys[self._pos:self._pos + self._step]
        self._pos += self._step
        return out
