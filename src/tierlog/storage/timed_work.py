"""Which logs have time-driven work, so that a LogManager tick visits those and no other.

A log with files waiting for deletion, a rolled segment to flush or a finite
``flush.ms`` needs its ``tick``; an idle one does not, and 10,000 idle logs
visited every second were an idle broker's largest cost after the metadata.
A log calls ``due()`` when it gains such work (on any thread: a roll on the
event loop, a cleaner's swap on its own); the manager takes the keys marked
since its last tick, keeps the logs in its timed set while
``Log.has_timed_work`` says so, and publishes the time of each tick in
``now_ms`` for the logs it no longer visits (their own clock is the last
append's).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["TimedWork", "TimedWorkInbox"]

K = TypeVar("K", bound=Hashable)   # what names a log (LogManager: its TopicPartition)


class TimedWorkInbox(Generic[K]):
    """The manager's side: logs marked due (thread-safe appends), and the time of the last tick."""

    def __init__(self, now_ms: int = 0) -> None:
        self.now_ms = now_ms
        self._marked: deque[K] = deque()

    def for_log(self, key: K) -> TimedWork[K]:
        return TimedWork(self, key)

    def take(self) -> set[K]:
        """The keys marked since the last call (each once)."""
        taken: set[K] = set()
        marked = self._marked
        while marked:
            taken.add(marked.popleft())
        return taken

    def mark(self, key: K) -> None:
        self._marked.append(key)


class TimedWork(Generic[K]):
    """A log's side: ``due()`` when it gains time-driven work; ``now_ms`` the manager's latest tick.

    Without an inbox (a log opened on its own, as in tests and the Raft log) nobody
    ticks selectively, so ``due`` does nothing and the time is 0.
    """

    __slots__ = ("_inbox", "_key")

    def __init__(self, inbox: TimedWorkInbox[K] | None = None, key: K | None = None) -> None:
        self._inbox = inbox
        self._key = key

    def due(self) -> None:
        if self._inbox is not None and self._key is not None:     # an inbox's TimedWork has its key
            self._inbox.mark(self._key)

    @property
    def now_ms(self) -> int:
        return self._inbox.now_ms if self._inbox is not None else 0
