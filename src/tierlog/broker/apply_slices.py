"""Metadata changes applied in slices, so that a large one does not stall the event loop.

A metadata commit that creates 10,000 partitions on a broker means 10,000 logs to create
and as many leader or follower transitions. Done in one go on the event loop, that takes
long enough for the broker to miss its heartbeats (``broker.session.timeout.ms``): the
controller fences it, its partitions lose their leader, and the unfence that follows is
another change of every partition. Kafka applies metadata deltas on the metadata publisher
thread, while heartbeats and requests go on elsewhere; here the replica manager hands each
change over as an iterator of steps (one per partition), and ``ApplySlices`` runs the steps
for at most ``APPLY_SLICE_S`` at a time (at least one step, so the longest stall is one
slice or one step, whichever is longer), giving the event loop back in between. Changes run in the order they came, each to its
end (its ``done`` callback) before the next begins.

Until a step runs, that partition keeps its previous state: a request for it gets the
answer it got before the change (NOT_LEADER_OR_FOLLOWER for a partition not led yet), as
with Kafka's brokers while they apply a delta. Without a running event loop (unit tests,
start-up) everything runs at once.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterator

from tierlog.clock import monotonic_s

__all__ = ["APPLY_SLICE_S", "ApplySlices"]

APPLY_SLICE_S = 0.02          # the longest run of steps before the event loop gets a turn

log = logging.getLogger(__name__)


class ApplySlices:
    """A queue of changes (iterators of steps) run in slices on the event loop."""

    def __init__(self, slice_s: float = APPLY_SLICE_S, clock: Callable[[], float] = monotonic_s) -> None:
        self._slice_s = slice_s
        self._clock = clock
        self._queue: deque[tuple[Iterator[None], Callable[[], None]]] = deque()
        self._closed = False

    @property
    def pending(self) -> bool:
        """Whether a change is still being applied."""
        return bool(self._queue)

    def submit(self, steps: Iterator[None], done: Callable[[], None]) -> None:
        """Apply ``steps`` after the changes before it; ``done()`` after its last step."""
        if self._closed:
            return
        self._queue.append((steps, done))
        if len(self._queue) == 1:
            self._run()

    def close(self) -> None:
        """Drop the steps not run yet and take no more (the broker is stopping)."""
        self._closed = True
        self._queue.clear()

    def _run(self) -> None:
        deadline = self._clock() + self._slice_s
        while self._queue:
            steps, done = self._queue[0]
            try:
                for _ in steps:
                    if self._clock() >= deadline and _loop_running():
                        asyncio.get_running_loop().call_soon(self._run)
                        return
            except Exception:
                log.exception("applying a metadata change failed; the rest of that change is skipped")
            self._queue.popleft()
            try:
                done()
            except Exception:
                log.exception("finishing a metadata change failed")


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
