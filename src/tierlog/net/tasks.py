"""Background tasks with an owner: each one kept until it ends, all of them stopped on shutdown.

A task nobody holds can be garbage-collected mid-flight and its failure goes
unseen; one nobody cancels outlives the component that started it.  So every
long-lived component that starts tasks holds a ``TaskSet``: ``spawn`` starts a
task and keeps it until it ends (logging a failure), ``close`` cancels the
ones still running and waits for them.  A ``spawn`` after ``close`` (a late
event during shutdown) does not start the coroutine.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine

__all__ = ["TaskSet"]

log = logging.getLogger(__name__)


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
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
