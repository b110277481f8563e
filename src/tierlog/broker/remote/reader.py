"""Fetches and timestamp lookups served from remote storage (Kafka's RemoteLogReader).

``read(part, offset, max_bytes, min_one)`` finds the finished remote segment
holding ``offset`` (by the leader epoch of that offset, then by offset) among
those within the log's leader-epoch lineage (``tiered.lineage``: a zombie upload
of an old leader whose log diverged is never served), turns
the offset into a file position through the segment's remote offset index
(Kafka's 8-byte entries: offset relative to the file's base offset, position),
reads from there through the chunk cache (fetching the next chunk ahead while
the answer is served) and returns whole batches from the one
holding ``offset``: at most ``max_bytes``, but at least one batch when
``min_one`` (Kafka's rule for the first partition of a response). Every batch
is CRC-checked before it is served. A read_committed read also answers the
aborted transactions overlapping what it returns (KIP-98 over KIP-405, Kafka's
RemoteLogManager.collectAbortedTransactions): from the uploaded ``.txnindex``
of the segment read and of the remote segments after it until an entry's
lastStableOffset reaches the end of the read, then from the local log's index.

Remote data loss (``tiered.data_loss``): a finished segment whose object is
missing from the store, or whose batches fail their CRC, answers
UNKNOWN_SERVER_ERROR, Kafka's answer and one every client surfaces to the
application (see that module for why).  Each such segment is logged once at
ERROR (partition, offsets, object key) and counted in ``data_loss``.  An
encrypted segment whose key this broker lacks (or whose key does not open it)
answers UNKNOWN_SERVER_ERROR too, logged once per segment; a chunk that fails
authentication is corrupt data.  Other
store errors (unreachable, throttled) stay KAFKA_STORAGE_ERROR: retriable, the
client fetches again.

Reads run on ``remote.log.reader.threads`` threads; at most
``remote.log.reader.max.pending.tasks`` may wait for one, and GETs keep to
``remote.log.manager.fetch.max.bytes.per.second``. Beyond that the
partition comes back empty without error (the client simply fetches again),
where Kafka would fail the read. Remote indexes are kept in memory, bounded by
``remote.log.index.file.cache.total.size.bytes`` (offset indexes parsed once). Counters (GETs, bytes, chunk
hits and misses) are logged as ``remote reads: ...`` at most every
STATS_LOG_INTERVAL_S when they changed.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from tierlog.clock import monotonic_s
from tierlog.protocol.errors import ErrorCode
from tierlog.records import decode_batches
from tierlog.records.header import (
    HEADER_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    base_offset_at,
    batch_size_at,
    last_offset_at,
    max_timestamp_at,
)
from tierlog.storage.txn_index import (
    TXN_ENTRY_BYTES,
    AbortedTxn,
    collect_aborted,
    decode_entries,
)
from tierlog.tiered import (
    CorruptRemoteDataError,
    IndexType,
    RemoteLogSegmentMetadata,
    RemoteResourceNotFoundError,
    RemoteSegmentStore,
    RemoteStorageError,
    TopicIdPartition,
    check_batches,
    segment_key,
)
from tierlog.tiered.chunk_cache import (
    DEFAULT_CACHE_BYTES,
    DEFAULT_CHUNK_SIZE,
    ChunkCache,
)
from tierlog.tiered.data_loss import LossKind, RemoteDataLoss
from tierlog.tiered.encrypted_objects import RemoteEncryptionKeyError
from tierlog.tiered.layout import LOG_SUFFIX
from tierlog.tiered.lineage import within_leader_epochs
from tierlog.tiered.offset_index import OFFSET_ENTRY_BYTES, parse_offset_index
from tierlog.tiered.read_rules import epoch_for_offset

from ..topic_stats import BrokerTopicStats
from .rate_limit import ByteRateLimit

__all__ = ["RemoteRead", "RemoteReader"]

log = logging.getLogger(__name__)
STATS_LOG_INTERVAL_S = 2.0
KEY_ERRORS_LOGGED = 1000
_TIME_ENTRY = struct.Struct(">qi")


class RemoteRead(NamedTuple):
    error: int
    records: bytes | memoryview = b""       # a view into a cached chunk, served without a copy
    aborted: tuple[AbortedTxn, ...] = ()    # read_committed: the aborted transactions overlapping the records


class RemoteReader:
    def __init__(self, config, segments: RemoteSegmentStore, metadata, cache_dir: Path,
                 stats: BrokerTopicStats | None = None):
        rsm = config.prefixed("rsm.config.")
        self.stats = stats or BrokerTopicStats(lambda topic_id: None)   # RemoteFetchBytes / RemoteFetchErrors
        self.segments = segments
        self.metadata = metadata
        self.chunks = ChunkCache(cache_dir, int(rsm.get("rsm.config.chunk.size", DEFAULT_CHUNK_SIZE)),
                                 int(rsm.get("rsm.config.fetch.chunk.cache.size", DEFAULT_CACHE_BYTES)))
        self.max_wait_s = int(config["remote.fetch.max.wait.ms"]) / 1000
        self.list_offsets_timeout_s = int(config["remote.list.offsets.request.timeout.ms"]) / 1000
        self._pool = ThreadPoolExecutor(int(config["remote.log.reader.threads"]), thread_name_prefix="remote-reader")
        self._max_pending = int(config["remote.log.reader.max.pending.tasks"])
        self._pending = 0
        self._indexes = _IndexCache(int(config["remote.log.index.file.cache.total.size.bytes"]))
        self._stats_task: asyncio.Task | None = None
        self._get_limit = ByteRateLimit(int(config["remote.log.manager.fetch.max.bytes.per.second"]), monotonic_s())
        self._get_limit_lock = threading.Lock()
        self.data_loss = RemoteDataLoss()
        self._key_errors: set[object] = set()       # segments whose key problem was logged

    async def start(self) -> None:
        self._stats_task = asyncio.get_running_loop().create_task(self._log_stats())

    async def close(self) -> None:
        if self._stats_task is not None:
            self._stats_task.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # --- fetch -----------------------------------------------------------------------------------

    async def read(self, part, offset: int, max_bytes: int, min_one: bool,
                   read_committed: bool = False) -> RemoteRead:
        tip = TopicIdPartition(part.topic_id, part.topic, part.index)
        if not self.metadata.is_ready(tip):
            return RemoteRead(ErrorCode.REPLICA_NOT_AVAILABLE)
        meta = self._segment_for(tip, part, offset)
        if meta is None:
            return RemoteRead(ErrorCode.OFFSET_OUT_OF_RANGE)
        if self._pending >= self._max_pending:
            return RemoteRead(ErrorCode.NONE)
        self._pending += 1
        loop = asyncio.get_running_loop()
        try:
            data, end, upper = await loop.run_in_executor(self._pool, self._read_batches, meta, offset, max_bytes,
                                                          min_one)
            aborted = await self._aborted(tip, part, meta, offset, upper) if read_committed and data else ()
        except RemoteEncryptionKeyError as e:
            return self._no_key(part, meta, e)
        except CorruptRemoteDataError as e:
            return self._lost(part, meta, LossKind.CORRUPT, e)
        except RemoteResourceNotFoundError as e:
            return self._lost(part, meta, LossKind.MISSING, e)
        except RemoteStorageError as e:
            log.warning("%s-%d: remote read at %d failed: %s", part.topic, part.index, offset, e)
            self.stats.remote_fetch_failed(part.topic)
            return RemoteRead(ErrorCode.KAFKA_STORAGE_ERROR)
        finally:
            self._pending -= 1
        self._read_ahead(meta, end)
        self.stats.remote_fetched(part.topic, len(data))
        return RemoteRead(ErrorCode.NONE, data, aborted)

    def _lost(self, part, meta: RemoteLogSegmentMetadata, kind: LossKind, cause: Exception) -> RemoteRead:
        """A lost remote segment: logged once, counted, UNKNOWN_SERVER_ERROR (see the module docstring)."""
        self.stats.remote_fetch_failed(part.topic)
        if self.data_loss.report(meta.segment_id, kind):
            log.error("%s-%d: remote segment [%d, %d] is %s (object %s: %s); fetches in it get "
                      "UNKNOWN_SERVER_ERROR until it is uploaded again or the log start moves past it "
                      "(tierlog remote verify, tierlog delete-records)", part.topic, part.index,
                      meta.start_offset, meta.end_offset, kind.value,
                      segment_key(meta.segment_id, meta.start_offset, LOG_SUFFIX), cause)
        return RemoteRead(ErrorCode.UNKNOWN_SERVER_ERROR)

    def _no_key(self, part, meta: RemoteLogSegmentMetadata, cause: Exception) -> RemoteRead:
        """An encrypted segment this broker has no (right) key for: never served, logged once per
        segment (up to KEY_ERRORS_LOGGED), UNKNOWN_SERVER_ERROR as for lost data (the key is the
        operator's to fix; the client reports it and fetches again)."""
        self.stats.remote_fetch_failed(part.topic)
        if meta.segment_id not in self._key_errors and len(self._key_errors) < KEY_ERRORS_LOGGED:
            self._key_errors.add(meta.segment_id)
            log.error("%s-%d: remote segment [%d, %d] cannot be decrypted: %s; fetches in it get "
                      "UNKNOWN_SERVER_ERROR", part.topic, part.index, meta.start_offset, meta.end_offset, cause)
        return RemoteRead(ErrorCode.UNKNOWN_SERVER_ERROR)

    def _read_ahead(self, meta: RemoteLogSegmentMetadata, position: int) -> None:
        """Fetch the chunk after the one a sequential reader is in, while it is served (one GET
        overlapping the next fetch instead of delaying it)."""
        index = position // self.chunks.chunk_size + 1
        key = segment_key(meta.segment_id, meta.start_offset, LOG_SUFFIX)
        if index * self.chunks.chunk_size >= meta.segment_size_in_bytes or self.chunks.holds(key, index) \
                or self._pending >= self._max_pending:
            return
        start = index * self.chunks.chunk_size
        future = asyncio.get_running_loop().run_in_executor(self._pool, self._log_range, meta, start, start + 1)
        future.add_done_callback(_ignore_failure)

    def _segment_for(self, tip: TopicIdPartition, part, offset: int) -> RemoteLogSegmentMetadata | None:
        cache = self.metadata.cache(tip)
        if cache is None:
            return None
        return _segment_in(cache, part.epoch_entries(), part.log_end_offset, offset)

    def _read_batches(self, meta: RemoteLogSegmentMetadata, offset: int, max_bytes: int,
                      min_one: bool) -> tuple[bytes | memoryview, int, int]:
        """Whole batches from the one holding ``offset``, the file position after them and the
        offset after them (exclusive)."""
        position, size = self._position(meta, offset), meta.segment_size_in_bytes
        while position < size:                       # skip the batches wholly before ``offset``
            head = self._log_range(meta, position, min(size, position + HEADER_SIZE))
            if last_offset_at(head) >= offset:
                break
            position += batch_size_at(head)
        if position >= size:
            return b"", position, offset
        first_size = batch_size_at(self._log_range(meta, position, position + LOG_OVERHEAD))
        want = max(max_bytes, first_size) if min_one else max_bytes
        key = segment_key(meta.segment_id, meta.start_offset, LOG_SUFFIX)
        data = self.chunks.read_view(key, position, min(size, position + want), lambda a, b: self._get(meta, a, b))
        checked = check_batches(data, first_must_be_whole=min_one)
        upper = checked.headers[-1].last_offset + 1 if checked.headers else offset
        return data[:checked.end], position + checked.end, upper

    async def _aborted(self, tip: TopicIdPartition, part, meta: RemoteLogSegmentMetadata, offset: int,
                       upper: int) -> tuple[AbortedTxn, ...]:
        """Kafka's RemoteLogManager.collectAbortedTransactions: the ``.txnindex`` of the segment read
        and of each remote segment after it (an ABORT marker may be far from its data) until one
        completes the search, then the local log's (entries of a segment held in both places once).
        The metadata is walked here on the event loop; each index is read on a reader thread, once."""
        found: set[AbortedTxn] = set()
        loop = asyncio.get_running_loop()
        current: RemoteLogSegmentMetadata | None = meta
        while current is not None:
            entries = await loop.run_in_executor(self._pool, self._transaction_index, current)
            more, complete = collect_aborted(entries, offset, upper)
            found.update(more)
            if complete:
                return _by_marker(found)
            current = self._segment_for(tip, part, current.end_offset + 1)
        return _by_marker(found | set(part.aborted_transactions(offset, upper)))

    def _transaction_index(self, meta: RemoteLogSegmentMetadata) -> list[AbortedTxn]:
        return self._indexes.get((meta.segment_id, IndexType.TRANSACTION),
                                 lambda: decode_entries(self.segments.fetch_transaction_index(meta)))

    def _position(self, meta: RemoteLogSegmentMetadata, offset: int) -> int:
        """The file position of the last index entry at or below ``offset`` (0 without one)."""
        base = self._file_base(meta)
        index = self._indexes.get((meta.segment_id, IndexType.OFFSET),
                                  lambda: parse_offset_index(self.segments.fetch_index(meta, IndexType.OFFSET)))
        return index.position_for(base, offset)

    def _file_base(self, meta: RemoteLogSegmentMetadata) -> int:
        """The base offset of the uploaded file (its first batch's): index entries are relative to it."""
        return base_offset_at(self._log_range(meta, 0, LENGTH_OFFSET))

    def _log_range(self, meta: RemoteLogSegmentMetadata, start: int, end: int) -> bytes:
        key = segment_key(meta.segment_id, meta.start_offset, LOG_SUFFIX)
        return self.chunks.read(key, start, end, lambda a, b: self._get(meta, a, b))

    def _get(self, meta: RemoteLogSegmentMetadata, start: int, end: int) -> bytes | bytearray:
        """One ranged GET, after waiting out remote.log.manager.fetch.max.bytes.per.second (on this thread)."""
        with self._get_limit_lock:
            wait = self._get_limit.delay_s(end - start, monotonic_s())
        if wait > 0:
            time.sleep(wait)
        return self.segments.fetch_log_segment(meta, start, end)


    # --- ListOffsets by timestamp ------------------------------------------------------------------

    async def offset_for_timestamp(self, part, timestamp: int) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the first remote record at or after ``timestamp``."""
        tip = TopicIdPartition(part.topic_id, part.topic, part.index)
        cache = self.metadata.cache(tip)
        if cache is None:
            return None
        entries, log_end = part.epoch_entries(), part.log_end_offset
        for meta in cache.finished_segments():
            if meta.max_timestamp_ms >= timestamp and meta.end_offset >= part.log_start_offset \
                    and within_leader_epochs(meta, entries, log_end):
                found = await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(
                    self._pool, self._find_timestamp, meta, timestamp), self.list_offsets_timeout_s)
                if found is not None:
                    offset, ts = found
                    return offset, ts, epoch_for_offset(part.epoch_entries(), offset)
        return None

    def _find_timestamp(self, meta: RemoteLogSegmentMetadata, timestamp: int) -> tuple[int, int] | None:
        position, size = 0, meta.segment_size_in_bytes
        while position < size:
            head = self._log_range(meta, position, min(size, position + HEADER_SIZE))
            batch_size = batch_size_at(head)
            if max_timestamp_at(head) >= timestamp:
                batch = self._log_range(meta, position, position + batch_size)
                for _header, records in decode_batches(batch):
                    for r in records:
                        if r.timestamp >= timestamp and r.offset >= meta.start_offset:
                            return r.offset, r.timestamp
            position += batch_size
        return None

    async def _log_stats(self) -> None:
        last = None
        while True:
            await asyncio.sleep(STATS_LOG_INTERVAL_S)
            stats = self.chunks.stats()
            if stats != last:
                log.info("remote reads: %s", " ".join(f"{k}={v}" for k, v in stats.items()))
                last = stats


def _segment_in(cache, entries, log_end: int, offset: int) -> RemoteLogSegmentMetadata | None:
    """The finished segment holding ``offset`` within the log's epoch lineage (None: none)."""
    found = cache.segment_for(epoch_for_offset(entries, offset), offset)
    if found is not None and within_leader_epochs(found, entries, log_end):
        return found
    return next((m for m in cache.finished_segments() if m.start_offset <= offset <= m.end_offset
                 and within_leader_epochs(m, entries, log_end)), None)


def _by_marker(found: set[AbortedTxn]) -> tuple[AbortedTxn, ...]:
    return tuple(sorted(found, key=lambda e: e.last_offset))


def _ignore_failure(future) -> None:
    """A read-ahead that failed: the read that needs the chunk will fetch it and report."""
    if not future.cancelled():
        future.exception()


class _IndexCache:
    """Remote index objects in memory, least recently used dropped beyond ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[object, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key, load):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        data = load()
        with self._lock:
            if key not in self._items:
                self._items[key] = data
                self._bytes += _size(data)
                while self._bytes > self.max_bytes and len(self._items) > 1:
                    _k, old = self._items.popitem(last=False)
                    self._bytes -= _size(old)
        return data


def _size(item) -> int:
    """Bytes an index takes as Kafka's file (8 per offset entry, 34 per aborted transaction; an
    empty transaction index counts as one entry so that the entry count is bounded too)."""
    if isinstance(item, list):
        return max(len(item), 1) * TXN_ENTRY_BYTES
    return len(item[0]) * OFFSET_ENTRY_BYTES if isinstance(item, tuple) else len(item)
