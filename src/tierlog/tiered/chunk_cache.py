"""A size-bounded cache of remote ``.log`` chunks on local disk (Aiven's chunk cache, simplified).

A remote segment is read in fixed chunks of ``chunk_size`` bytes (chunk i covers
[i * chunk_size, (i + 1) * chunk_size)); each chunk is one ranged GET, kept as a
file under ``directory`` and evicted least recently used once the cache holds
more than ``max_bytes``. A sequential reader makes about one GET per chunk; a
second reader of the same range makes none while the chunks stay cached.
The HOT_CHUNKS most recently used chunks also stay in memory, so the many small
reads of one fetch (batch headers, then the batches) cost one file read or GET.
Thread-safe (the reader threads share it). Counters: ``stats()``.

Settings (Aiven's names): ``rsm.config.chunk.size`` (4 MiB),
``rsm.config.fetch.chunk.cache.path``, ``rsm.config.fetch.chunk.cache.size`` (1 GiB).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

__all__ = ["DEFAULT_CACHE_BYTES", "DEFAULT_CHUNK_SIZE", "ChunkCache"]

DEFAULT_CHUNK_SIZE = 4 * 1024 * 1024
DEFAULT_CACHE_BYTES = 1024 * 1024 * 1024
HOT_CHUNKS = 8


Chunk = bytes | bytearray              # a GET's body (a decrypted one is a bytearray)
Fetch = Callable[[int, int], Chunk]       # fetch(a, b): bytes [a, b) of the object, fewer at its end


class ChunkCache:
    def __init__(self, directory: Path, chunk_size: int = DEFAULT_CHUNK_SIZE, max_bytes: int = DEFAULT_CACHE_BYTES):
        if chunk_size <= 0 or max_bytes < 0:
            raise ValueError("chunk size must be positive and the cache size not negative")
        self.directory = directory
        self.chunk_size = chunk_size
        self.max_bytes = max_bytes
        shutil.rmtree(directory, ignore_errors=True)       # a restart starts cold: names are per process
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._files: OrderedDict[str, int] = OrderedDict()  # file name -> size, least recent first
        self._bytes = 0
        self._hot: OrderedDict[str, Chunk] = OrderedDict()    # in memory, most recent last
        self._loading: dict[str, threading.Event] = {}        # chunks one thread is fetching now
        self._stats = {"gets": 0, "get_bytes": 0, "chunk_hits": 0, "chunk_misses": 0}

    def read(self, key: str, start: int, end: int, fetch: Fetch) -> bytes:
        """Bytes [start, end) of object ``key``; ``fetch(a, b)`` GETs a range of it (fewer at its end)."""
        out = bytearray()
        for index in range(start // self.chunk_size, (end - 1) // self.chunk_size + 1):
            chunk = self._chunk(key, index, fetch)
            base = index * self.chunk_size
            out += chunk[max(0, start - base):max(0, end - base)]
            if len(chunk) < self.chunk_size:
                break                                       # the object ends in this chunk
        return bytes(out)

    def read_view(self, key: str, start: int, end: int, fetch: Fetch) -> memoryview:
        """``read``, as a view into the cached chunk when the range lies in one chunk (no copy:
        the fetch path serves these bytes as they are)."""
        index = start // self.chunk_size
        if (end - 1) // self.chunk_size != index:
            return memoryview(self.read(key, start, end, fetch))
        base = index * self.chunk_size
        return memoryview(self._chunk(key, index, fetch))[start - base:end - base]

    def holds(self, key: str, index: int) -> bool:
        """Whether chunk ``index`` of ``key`` is cached (for read-ahead: fetch it only if not)."""
        name = self._name(key, index)
        with self._lock:
            return name in self._hot or name in self._files

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._stats)

    def _chunk(self, key: str, index: int, fetch: Fetch) -> Chunk:
        """One chunk: from memory, from disk, or fetched once (a second thread asking for a chunk
        being fetched waits for that fetch instead of making its own GET)."""
        name = self._name(key, index)
        while True:
            with self._lock:
                loading = self._loading.get(name)
                if loading is None:
                    break
            loading.wait()
        with self._lock:
            hot = self._hot.get(name)
            if hot is not None:
                self._hot.move_to_end(name)
                return hot
            if name in self._files:
                self._files.move_to_end(name)
                self._stats["chunk_hits"] += 1
                try:
                    return self._keep_hot(name, (self.directory / name).read_bytes())
                except OSError:
                    self._forget(name)
            self._stats["chunk_misses"] += 1
            done = self._loading[name] = threading.Event()
        try:
            data = fetch(index * self.chunk_size, (index + 1) * self.chunk_size)
            with self._lock:                # in memory before the threads waiting for it wake
                self._stats["gets"] += 1
                self._stats["get_bytes"] += len(data)
                self._keep_hot(name, data)
        finally:
            with self._lock:
                self._loading.pop(name, None)
            done.set()
        if len(data) <= self.max_bytes and self._write(name, data):     # the file, outside the lock
            with self._lock:
                if name not in self._files:
                    self._store(name, len(data))
        return data

    @staticmethod
    def _name(key: str, index: int) -> str:
        return f"{hashlib.sha1(key.encode()).hexdigest()}-{index}"

    def _keep_hot(self, name: str, data: Chunk) -> Chunk:
        self._hot[name] = data
        while len(self._hot) > HOT_CHUNKS:
            self._hot.popitem(last=False)
        return data

    def _write(self, name: str, data: Chunk) -> bool:
        tmp = self.directory / f"{name}.{threading.get_ident()}.tmp"
        try:
            tmp.write_bytes(data)
            os.replace(tmp, self.directory / name)
        except OSError:
            tmp.unlink(missing_ok=True)
            return False            # a full cache disk only costs a later GET
        return True

    def _store(self, name: str, size: int) -> None:
        self._files[name] = size
        self._bytes += size
        while self._bytes > self.max_bytes and self._files:
            self._forget(next(iter(self._files)))

    def _forget(self, name: str) -> None:
        self._hot.pop(name, None)
        self._bytes -= self._files.pop(name, 0)
        (self.directory / name).unlink(missing_ok=True)
