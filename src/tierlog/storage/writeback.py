"""Early, small-step writeback of appended segment data (Linux).

Appends land in the page cache.  Left alone, Linux writes dirty pages back
only after ``vm.dirty_expire_centisecs`` or when dirty memory passes its
background threshold, and then all at once: ext4 allocates blocks for
megabytes of delayed-allocation pages and the block layer throttles writers,
so an append's ``pwrite`` stalls for hundreds of milliseconds while every
connection of the event loop waits behind it (bench/README.md, "Single node against
Tansu"; the analysis is in that page's git history, "Why tierlog's tail latency spikes").

Instead, every ``STEP_BYTES`` of appends a segment asks for the whole pages
behind its tail to be written back (``sync_file_range(SYNC_FILE_RANGE_WRITE)``,
asynchronous, the way RocksDB's ``bytes_per_sync`` does).  The call itself
allocates blocks and queues I/O, so it runs on one background thread, never
on the event loop.  Only whole pages below the tail are written back, so an
append never waits for a page under writeback.  This is not durability: fsync
still follows ``flush.messages`` / ``flush.ms``.
"""
from __future__ import annotations

import ctypes
import logging
import queue
import sys
import threading

__all__ = ["STEP_BYTES", "schedule", "writeback_end"]

log = logging.getLogger(__name__)

STEP_BYTES = 1 << 20          # start writeback once this much has been appended since the last start
PAGE = 4096
MAX_QUEUED = 4096             # requests waiting for the thread; more are dropped (the kernel writes back anyway)
_SYNC_FILE_RANGE_WRITE = 2    # <linux/fs.h>


def writeback_end(started_at: int, size: int) -> int | None:
    """Where a writeback started at ``started_at`` should end now, or None when it is not due."""
    end = size - size % PAGE
    return end if end - started_at >= STEP_BYTES else None


class _Writeback:
    def __init__(self, sync_file_range):
        self._sync = sync_file_range
        self._queue: queue.Queue = queue.Queue(MAX_QUEUED)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def schedule(self, fd: int, offset: int, nbytes: int) -> None:
        self._ensure_thread()
        try:
            self._queue.put_nowait((fd, offset, nbytes))
        except queue.Full:
            pass

    def _ensure_thread(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="segment-writeback", daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        while True:
            fd, offset, nbytes = self._queue.get()
            # a closed (or reused) fd only wastes the call: EBADF, or an early writeback of another file
            if self._sync(fd, offset, nbytes, _SYNC_FILE_RANGE_WRITE) != 0:
                log.debug("sync_file_range(%d, %d, %d) failed: errno %d", fd, offset, nbytes, ctypes.get_errno())
            self._queue.task_done()


def _load() -> _Writeback | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    fn.restype = ctypes.c_int
    return _Writeback(fn)


_WRITEBACK = _load()


def schedule(fd: int, offset: int, nbytes: int) -> None:
    """Start writeback of ``nbytes`` at ``offset`` of ``fd`` soon, off the calling thread (no-op off Linux)."""
    if _WRITEBACK is not None and nbytes > 0:
        _WRITEBACK.schedule(fd, offset, nbytes)
