"""Background tasks with an owner: each one kept until it ends, all of them stopped on shutdown.

A task nobody holds can be garbage-collected mid-flight and its failure goes
unseen; one nobody cancels outlives the component that started it.  So every
long-lived component that starts tasks holds a ``TaskSet``: ``spawn`` starts a
task and keeps it until it ends (logging a failure), ``close`` cancels the
ones still running and waits for them.  A ``spawn`` after ``close`` (a late
event during shutdown) does not start the coroutine.

``cancel_and_wait`` cancels AGAIN while a task is still running: on Python 3.11,
``asyncio.wait_for`` returns its inner result instead of raising when the inner
awaitable completes in the same loop iteration as the cancellation (fixed in
3.12), so a ``while`` loop around ``wait_for(event.wait(), t)`` can swallow one
cancellation and run on; awaiting it once would then hang shutdown.  A task that
outlives ``CLOSE_TIMEOUT_S`` anyway is logged by name and left behind.

``wait_until`` waits for a condition that an event announces changes of.

``expire_after`` bounds the wait for a future the caller owns (a request's answer, a parked
fetch) by ending it at the deadline, so the caller awaits the future itself: its task wakes in
the loop iteration that completes it, where ``asyncio.wait_for`` adds a waiter future of its own
and one more iteration, on every inter-broker answer and every parked fetch woken.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine

__all__ = ["CLOSE_TIMEOUT_S", "TaskSet", "cancel_and_wait", "expire_after", "wait_until"]

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 10.0      # how long close waits for cancelled tasks before logging them
RECANCEL_EVERY_S = 0.05     # a task still running after this is cancelled again


def expire_after(fut: asyncio.Future, timeout_s: float,
                 error: type[BaseException] | None = None) -> asyncio.TimerHandle:
    """A timer that ends ``fut`` after ``timeout_s`` unless it ended first: with ``error`` raised to
    its awaiter, or None as its result.  Cancel the timer once ``fut`` is done."""
    return asyncio.get_running_loop().call_later(timeout_s, _expire, fut, error)


def _expire(fut: asyncio.Future, error: type[BaseException] | None) -> None:
    if fut.done():
        return
    if error is None:
        fut.set_result(None)
    else:
        fut.set_exception(error())


async def wait_until(holds: Callable[[], bool], changed: asyncio.Event, timeout_s: float) -> bool:
    """True once ``holds()`` is true, asked again each time ``changed`` is set; False at the deadline.
    Whoever changes what ``holds`` reads sets ``changed`` (this clears it before each wait)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not holds():
        remaining = deadline - loop.time()
        if remaining <= 0:
            return False
        changed.clear()
        try:
            await asyncio.wait_for(changed.wait(), remaining)
        except TimeoutError:
            return holds()
    return True


async def cancel_and_wait(tasks, owner: str, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
    """Cancel ``tasks`` (again while any still runs) until all have ended or ``timeout_s`` passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    pending = {t for t in tasks if not t.done()}
    while pending:
        remaining = deadline - loop.time()
        if remaining <= 0:
            log.warning("%s: tasks still running %.0f s after cancellation: %s", owner, timeout_s,
                        ", ".join(sorted(t.get_name() for t in pending)))
            return
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=min(RECANCEL_EVERY_S, remaining))


class TaskSet:
    def __init__(self, owner: str):
        self.owner = owner                  # for log lines
        self._tasks: set[asyncio.Task] = set()
        self._closed = False

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine, name: str | None = None) -> asyncio.Task | None:
        """Start ``coro`` as a task of this set; None (and ``coro`` closed) once the set is closed."""
        if self._closed:
            coro.close()
            return None
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._on_done)
        return task

    def _on_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("%s: background task %s failed: %r", self.owner, task.get_name(), task.exception())

    async def close(self) -> None:
        """Cancel every task still running and wait until all have ended."""
        self._closed = True
        await cancel_and_wait(list(self._tasks), self.owner)
