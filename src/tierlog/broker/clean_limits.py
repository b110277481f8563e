"""CleanLimits: the log cleaner threads' one path to the partitions' last stable offsets.

A compacted log is cleaned only below its partition's last stable offset (KIP-98: no
transaction still undecided is cleaned; at most the high watermark). That offset is
event-loop state (the partition's leader state, its log end, its open
transactions), and the cleaners run on threads of their own (storage/log_cleaner.py).
``limit_of(key)``, on a cleaner thread, queues the read onto the event loop
(``call_soon_threadsafe``) and waits up to ``READ_TIMEOUT_S`` for the answer, so the
state is only ever read on the loop. No answer in time (a busy or stopping loop) is
0: nothing of that log is cleaned this pass, never more than allowed. Called on the
loop's own thread (or with no loop, as in single-threaded tests) it reads at once.
``close()`` (the replica manager stopping, before the log manager joins its cleaner
threads) answers every read in flight and every later one 0 at once, so a cleaner
pass over many compacted logs never waits out a read timeout per log at shutdown.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable

__all__ = ["READ_TIMEOUT_S", "CleanLimits"]

READ_TIMEOUT_S = 5.0
TopicPartition = tuple[str, int]


class CleanLimits:
    def __init__(self, loop: asyncio.AbstractEventLoop | None, read: Callable[[TopicPartition], int | None],
                 timeout_s: float = READ_TIMEOUT_S):
        """``read(key)``: the partition's last stable offset, or None for a log it does not host
        (the replica manager's; only ever called on ``loop``)."""
        self._loop = loop
        self._read = read
        self._timeout_s = timeout_s
        self._loop_thread = threading.get_ident() if loop is not None else None
        self._lock = threading.Lock()
        self._pending: set[concurrent.futures.Future[int | None]] = set()
        self._closed = False

    def close(self) -> None:
        """Every read in flight and every later one answers 0 (nothing cleaned) at once."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, set()
        for answer in pending:
            if not answer.done():
                answer.set_result(0)

    def limit_of(self, key: TopicPartition) -> int | None:
        """How far the cleaner may clean ``key``'s log (thread-safe)."""
        if self._loop is None or threading.get_ident() == self._loop_thread:
            return self._read(key)
        answer: concurrent.futures.Future[int | None] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                return 0
            self._pending.add(answer)

        def read_on_loop() -> None:
            if answer.done():
                return
            try:
                answer.set_result(self._read(key))
            except Exception as exc:       # noqa: BLE001 - the waiting thread decides
                answer.set_exception(exc)
        try:
            self._loop.call_soon_threadsafe(read_on_loop)
            return answer.result(self._timeout_s)
        except (RuntimeError, concurrent.futures.TimeoutError, concurrent.futures.InvalidStateError):
            return 0                       # the loop is closed or did not answer
        finally:
            with self._lock:
                self._pending.discard(answer)
