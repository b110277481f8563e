"""CleanLimits: the log cleaner threads' one path to the partitions' last stable offsets.

A compacted log is cleaned only below its partition's last stable offset (KIP-98: no
transaction still undecided is cleaned; at most the high watermark). That offset is
event-loop state (the partition's leader state, its log end, its open
transactions), and the cleaners run on threads of their own (storage/cleaner_threads.py).
``limits_of(keys)``, on a cleaner thread once per pass, queues the read of all of
them onto the event loop (``call_soon_threadsafe``) and waits up to
``READ_TIMEOUT_S`` for the answer, so the state is only ever read on the loop. No
answer in time (a busy or stopping loop) is 0 for each: nothing is cleaned this pass,
never more than allowed. Called on the
loop's own thread (or with no loop, as in single-threaded tests) it reads at once.
``close()`` (the replica manager stopping, before the log manager joins its cleaner
threads) answers every read in flight and every later one 0 at once, so a cleaner
pass over many compacted logs never waits out a read timeout per log at shutdown.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Mapping

__all__ = ["READ_TIMEOUT_S", "CleanLimits"]

READ_TIMEOUT_S = 5.0
TopicPartition = tuple[str, int]


class CleanLimits:
    def __init__(self, loop: asyncio.AbstractEventLoop | None, read: Callable[[TopicPartition], int | None],
                 timeout_s: float = READ_TIMEOUT_S):
        """``read(key)``: the partition's last stable offset, or None for a log it does not host
        (the replica manager's; only ever called on ``loop``, once per key of a ``limits_of``)."""
        self._loop = loop
        self._read = read
        self._timeout_s = timeout_s
        self._loop_thread = threading.get_ident() if loop is not None else None
        self._lock = threading.Lock()
        self._pending: dict[concurrent.futures.Future, list[TopicPartition]] = {}    # read in flight -> its keys
        self._closed = False

    def close(self) -> None:
        """Every read in flight and every later one answers 0 (nothing cleaned) at once."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, {}
        for answer, keys in pending.items():
            if not answer.done():
                answer.set_result(dict.fromkeys(keys, 0))


    def limits_of(self, keys: list[TopicPartition]) -> Mapping[TopicPartition, int | None]:
        """How far the cleaner may clean each of ``keys``' logs (thread-safe; one loop round trip)."""
        if self._loop is None or threading.get_ident() == self._loop_thread:
            return {key: self._read(key) for key in keys}
        answer: concurrent.futures.Future[Mapping[TopicPartition, int | None]] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                return dict.fromkeys(keys, 0)
            self._pending[answer] = keys

        def read_on_loop() -> None:
            if answer.done():
                return
            try:
                answer.set_result({key: self._read(key) for key in keys})
            except Exception as exc:       # noqa: BLE001 - the waiting thread decides
                answer.set_exception(exc)
        try:
            self._loop.call_soon_threadsafe(read_on_loop)
            return answer.result(self._timeout_s)
        except (RuntimeError, concurrent.futures.TimeoutError, concurrent.futures.InvalidStateError):
            return dict.fromkeys(keys, 0)          # the loop is closed or did not answer
        finally:
            with self._lock:
                self._pending.pop(answer, None)
