"""One background thread per log directory for its disk syncs (Kafka's scheduler
thread that flushes rolled segments and writes the checkpoint files).

Jobs run one at a time in submission order, off the event loop: a log's
time-driven flushes (after a roll, flush.ms) and the directory's checkpoint files
(replication-offset-checkpoint, recovery-point-offset-checkpoint,
log-start-offset-checkpoint). The caller snapshots what to write on its own
thread and the job only writes it, so a later snapshot is never overwritten by an
earlier one. A job that raises is logged here; jobs report disk failures to their
owner themselves (the log goes offline, the LogManager hears of the directory).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

__all__ = ["DirWriter", "Writer"]

_log = logging.getLogger(__name__)


class Writer(Protocol):
    def submit(self, job: Callable[..., None], *args) -> Future: ...


class DirWriter:
    """The single writer thread of ``log_dir`` (started at the first job)."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"log-writer-{log_dir.name}")

    def submit(self, job: Callable[..., None], *args) -> Future:
        """Run ``job(*args)`` after every job submitted before it; the future is its outcome."""
        future = self._executor.submit(job, *args)
        future.add_done_callback(self._log_failure)
        return future

    def call(self, job: Callable[..., None], *args) -> None:
        """Run ``job(*args)`` in order with the queued jobs and wait for it (shutdown, tests)."""
        self.submit(job, *args).result()

    def drain(self) -> None:
        """Wait until every job submitted so far is done."""
        self.call(_nothing)

    def close(self) -> None:
        """Run the queued jobs, then stop the thread."""
        self._executor.shutdown(wait=True)

    def _log_failure(self, future: Future) -> None:
        if not future.cancelled() and future.exception() is not None:
            _log.error("background write in %s failed", self.log_dir, exc_info=future.exception())


def _nothing() -> None:
    return None
