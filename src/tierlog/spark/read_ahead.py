"""Bounded read-ahead: the next ranged GETs of a segment run while the current chunk is decoded,
and a task's reading runs while Spark takes the batches already read.

A direct read decodes a chunk (CRC-32C, decompression, Arrow building: mostly
outside the GIL) and then waits for the next GET; on S3 the GET is as long as the
decode. ``read_ahead`` keeps up to ``ahead`` GETs in flight (a thread each) while the task
decodes, so the two overlap. Memory stays bounded: at most ``ahead + 1`` chunks are
held (``remoteReadAheadChunks`` x ``READ_CHUNK_BYTES`` more than without).

``in_background`` runs a whole reader (fetch and decode) on a thread of its own,
up to ``depth`` Arrow batches ahead of the task's thread, which hands batches to
the JVM (``readAheadBatches``).
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["in_background", "read_ahead"]

T = TypeVar("T")
R = TypeVar("R")


def read_ahead(fetch: Callable[[T], R], items: Iterable[T], ahead: int) -> Iterator[R]:
    """``fetch(item)`` for each item, in order, with up to ``ahead`` of the next ones fetched meanwhile
    (0: one after another, no thread). A fetch's error is raised where its result would be yielded;
    closing the iterator early cancels the fetches not yet started."""
    if ahead <= 0:
        yield from map(fetch, items)
        return
    pending = iter(items)
    pool = ThreadPoolExecutor(max_workers=ahead, thread_name_prefix="tierlog-read-ahead")
    queue: deque[Future[R]] = deque()
    try:
        _fill(pool, queue, fetch, pending, ahead)
        while queue:
            result = queue.popleft().result()
            _fill(pool, queue, fetch, pending, ahead)
            yield result
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _fill(pool: ThreadPoolExecutor, queue: deque, fetch: Callable, pending: Iterator, size: int) -> None:
    while len(queue) < size:
        item = next(pending, _END)
        if item is _END:
            return
        queue.append(pool.submit(fetch, item))


_END = object()
_POLL_S = 0.1           # how often a reader blocked on a full queue looks whether it was stopped


def in_background(make: Callable[[], Iterator[R]], depth: int) -> Iterator[R]:
    """The items of ``make()``, which runs on a thread of its own up to ``depth`` items ahead
    (0: here, no thread). Its error is raised after the items before it; closing this iterator
    stops the reader (it closes its iterator on its own thread)."""
    if depth <= 0:
        yield from make()
        return
    items: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    thread = threading.Thread(target=_produce, args=(make, items, stop), name="tierlog-read-ahead", daemon=True)
    thread.start()
    try:
        while (item := items.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def _produce(make: Callable[[], Iterator], items: queue.Queue, stop: threading.Event) -> None:
    try:
        reader = make()
        try:
            for item in reader:
                if not _put(items, item, stop):
                    return
        finally:
            close = getattr(reader, "close", None)
            if close is not None:
                close()
    except Exception as exc:        # noqa: BLE001 - any error of the reader is the task's: raised on its thread
        _put(items, _Failed(exc), stop)
        return
    _put(items, _END, stop)


def _put(items: queue.Queue, item, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            items.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False
