"""One partition's durable, segmented log (Kafka's UnifiedLog + LocalLog, local part).

Offsets: ``log_start_offset`` (inclusive, may be below the local data when older
data is in remote storage), ``local_log_start_offset`` (first local offset),
``log_end_offset`` (exclusive), ``recovery_point`` (exclusive: everything below it
is fsynced).

Append path (leader): validate headers + CRC (``records.validate``), stamp base
offset and leader epoch in place (plus LogAppendTime when configured), update the
epoch cache, roll if needed, one ``pwrite``, index bookkeeping per batch. No
per-record work. Read path: index lookup + a few header reads, answered as
``FileRegion``s of whole batches.

Durability: data is fsynced by ``flush`` (called by flush.messages after appends,
by ``tick`` for flush.ms, by ``tick`` after a roll for the rolled segment, and on
close). With a writer (the log directory's thread, ``dir_writer``) ``tick`` queues
its flush there, like Kafka's scheduler flushing a rolled segment; flush.messages
stays synchronous so the append's answer waits for it. A flush holds the lock
only to take and to finish its work, not across the fsyncs (``log_flush``); the
recovery point moves once they are done. Deleted segments (retention,
truncation) are renamed ``.deleted``; their descriptors close and files go only
after file.delete.delay.ms, in ``tick``.

Any OSError takes the log offline: the operation and every later one raise
``KafkaStorageError`` (the broker answers KAFKA_STORAGE_ERROR).

Thread safety: every public method holds the log's lock (flushes: see above;
one at a time, under the flush lock, which is always taken before the log's lock).
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import random
import shutil
import threading
from pathlib import Path

from tierlog.records.control import read_marker
from tierlog.records.header import CONTROL_BIT, NO_TIMESTAMP, BatchHeader, TimestampType
from tierlog.records.validate import validate
from tierlog.storage import retention
from tierlog.storage.append_checks import (
    check_follower_offsets,
    check_produced,
    stamp,
    writable,
)
from tierlog.storage.dir_failure import LogDirFailureChannel
from tierlog.storage.dir_writer import Writer
from tierlog.storage.epoch_cache import LeaderEpochCache
from tierlog.storage.errors import OffsetOutOfRangeError
from tierlog.storage.files import SWAP_SUFFIX, fsync_dir
from tierlog.storage.io_guard import IoGuard
from tierlog.storage.loader import load_log
from tierlog.storage.log_config import LogConfig
from tierlog.storage.log_durability import LogDurability
from tierlog.storage.log_epochs import LogEpochs
from tierlog.storage.log_lookups import LogLookups
from tierlog.storage.log_read import (
    SegmentInfo,
    read_from,
    segment_index,
)
from tierlog.storage.log_transactions import LogTransactions
from tierlog.storage.marker_rounds import MarkerError, marker_round
from tierlog.storage.partition_metadata import reconcile_topic_id
from tierlog.storage.producer_snapshot_codec import decode_snapshot
from tierlog.storage.producer_snapshot_files import ProducerSnapshots
from tierlog.storage.producer_state import ProducerStateManager
from tierlog.storage.remote_offset import HighestOffsetInRemoteStorage
from tierlog.storage.results import (
    AppendResult,
    CleaningView,
    ReadResult,
)
from tierlog.storage.roll import roll_jitter_ms, should_roll
from tierlog.storage.segment import LogSegment
from tierlog.storage.timed_work import TimedWork
from tierlog.storage.txn_index import TransactionIndexes

__all__ = ["Log", "SegmentInfo"]

_EMPTY = ReadResult([], 0)
_log = logging.getLogger(__name__)


class Log(LogDurability, LogEpochs, LogLookups, LogTransactions):
    """A partition's log. Build with ``Log.open``."""

    def __init__(self, directory: Path, config: LogConfig, topic_id: bytes | None, segments: list[LogSegment],
                 epoch_cache: LeaderEpochCache, log_start_offset: int, recovery_point: int, now_ms: int,
                 rng: random.Random, writer: Writer | None = None,
                 failures: LogDirFailureChannel | None = None, timed: TimedWork | None = None) -> None:
        self.directory = directory
        self.config = config
        self.topic_id = topic_id
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.highest_offset_in_remote_storage = HighestOffsetInRemoteStorage()   # tiered storage writes it
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]
        self._epochs = epoch_cache
        self._epochs.defer_additions = True     # a new epoch is written by the next flush (epoch_cache)
        self._local_start_floor = segments[0].base_offset
        self._rng = rng
        self._lock = threading.RLock()
        self._dir_dirty = False
        self._last_flush_ms = now_ms
        self._first_timestamp: tuple[tuple, int] | None = None  # (key, local_log_start_timestamp)
        self._clock_ms = now_ms  # the latest now_ms seen, for calls that take none (see _latest_ms)
        self._timed = timed or TimedWork()
        self._roll_flush_offset: int | None = None   # a rolled segment's end, to flush up to in tick
        self._flush_lock = threading.Lock()           # one flush at a time; taken before _lock
        self._truncations = 0                         # a flush that saw fewer does not move the recovery point
        self._writer = writer
        self._failures = failures
        self._guard = IoGuard(directory, failures)
        self._flush_queued = False
        self._closed = False
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._producers = ProducerStateManager()
        self._snapshots = ProducerSnapshots(directory)
        self._snapshots.delete_above(self.log_end_offset)
        self._txn_index = TransactionIndexes(directory)     # aborted transactions (.txnindex)
        self._rebuild_producers()
        self._jitter_active()

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        now_ms: int,
        topic_id: bytes | None = None,
        *,
        recovery_point: int | None = None,
        log_start_offset: int | None = None,
        clean_shutdown: bool = False,
        rng: random.Random | None = None,
        writer: Writer | None = None,
        failures: LogDirFailureChannel | None = None,
        sync_new: bool = True,
        timed: TimedWork | None = None,
    ) -> Log:
        """Create or recover the log in ``directory``.

        ``recovery_point`` / ``log_start_offset`` come from the log directory's
        checkpoints (LogManager passes them); unknown recovery point means every
        segment is scanned. ``clean_shutdown`` skips recovery entirely. ``writer``
        (the log directory's, LogManager passes it) runs the time-driven flushes;
        ``failures`` hears of an I/O error of this log, as one of its directory's.
        ``sync_new=False``: a new log's files are not fsynced (the caller does it, ``loader``).
        ``timed``: where the log says it has time-driven work, and reads the time (``log_durability``).
        """
        directory = Path(directory)
        loaded = load_log(directory, config, now_ms, recovery_point, log_start_offset, clean_shutdown, sync_new)
        topic_id = reconcile_topic_id(directory, topic_id, sync_new)
        return cls(directory, config, topic_id, loaded.segments, loaded.epoch_cache, loaded.log_start_offset,
                   loaded.recovery_point, now_ms, rng or random.Random(str(directory)), writer, failures, timed)

    def assign_topic_id(self, topic_id: bytes) -> None:
        """Record the topic id of a log created without one; a different id is an error."""
        with self._lock, self._io():
            self.topic_id = reconcile_topic_id(self.directory, topic_id)

    # --- offsets -----------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        """Offset the next append gets (exclusive end of the log)."""
        return self._segments[-1].next_offset

    @property
    def local_log_start_offset(self) -> int:
        return max(self._segments[0].base_offset, self._local_start_floor)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs.latest_epoch

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    # --- appends -----------------------------------------------------------------------------

    def append(self, records: bytearray, leader_epoch: int, now_ms: int, client: bool = True) -> AppendResult:
        """Append one producer batch as leader: validate, assign offsets, stamp, write.
        ``client`` False: a coordinator's batch, exempt from Kafka's client-origin batch checks
        (a TxnOffsetCommit batch has a producer id and no sequence).

        ``records`` is stamped in place: pass a bytearray or a writable memoryview
        (a read-only buffer is copied first).
        """
        if type(records) is not bytearray:
            records = writable(records)
        with self._lock, self._io():
            self._clock_ms = now_ms
            validated = validate(records, max_batch_bytes=self.config.max_message_bytes, client=client)
            check_produced(validated, self.config, now_ms, records, self.directory)
            duplicate = self._producers.check(validated.headers)
            if duplicate is not None:       # a producer's retry of a batch already in the log
                return AppendResult(duplicate.base_offset, duplicate.last_offset, NO_TIMESTAMP,
                                    self.log_start_offset, NO_TIMESTAMP, 0)
            base = self.log_end_offset
            append_time = now_ms if self.config.log_append_time else NO_TIMESTAMP
            headers = stamp(records, validated, base, leader_epoch, append_time)
            self._epochs.assign_leader_epoch(leader_epoch, base)
            self._append_one(records, headers, now_ms)
            max_timestamp = append_time if append_time != NO_TIMESTAMP else validated.max_timestamp
            result = AppendResult(base, base + validated.record_count - 1, append_time, self.log_start_offset,
                                  max_timestamp, validated.record_count)
            flush = self._flush_due()
        if flush:
            self.flush(now_ms)
        return result

    def append_as_follower(self, records: bytes | bytearray | memoryview, now_ms: int) -> AppendResult:
        """Append replicated batches as they are (offsets and epochs already set)."""
        with self._lock, self._io():
            self._clock_ms = now_ms
            validated = validate(records)
            headers = validated.headers
            if not headers:
                return AppendResult(-1, -1, NO_TIMESTAMP, self.log_start_offset, NO_TIMESTAMP, 0)
            first, last = headers[0], headers[-1]
            one = len(headers) == 1     # most fetch answers of a partition: one batch, no grouping
            if not one or first.base_offset < self.log_end_offset:
                check_follower_offsets(headers, self.log_end_offset)     # raises on a bad one, with the offsets
            for header in headers:
                self._epochs.assign_from_batch(header.partition_leader_epoch, header.base_offset)
            (self._append_one if one else self._append_batches)(records, headers, now_ms)
            append_time = last.max_timestamp if last.timestamp_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
            result = AppendResult(first.base_offset, last.last_offset, append_time, self.log_start_offset,
                                  validated.max_timestamp, validated.record_count)
            flush = self._flush_due()
        if flush:
            self.flush(now_ms)
        return result

    def append_marker(self, records: bytearray, leader_epoch: int, now_ms: int,
                      transaction_version: int = 0) -> AppendResult:
        """One marker (``append_markers``); its refusal raised."""
        result = self.append_markers([(records, transaction_version)], leader_epoch, now_ms)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def append_markers(self, markers: list[tuple[bytearray, int]], leader_epoch: int,
                       now_ms: int) -> list[AppendResult | MarkerError]:
        """Append transaction markers ``(control batch, transaction_version)`` as leader
        (WriteTxnMarkers, never a producer), several producers' in one write (``marker_rounds``):
        the producer state checks each one's epoch (a marker older than the producer's is fenced,
        and with ``transaction_version`` 2 one not newer, KIP-1228; one from an older coordinator
        epoch than the producer's last marker is TRANSACTION_COORDINATOR_FENCED) and each ends its
        producer's open transaction, an abort going into the ``.txnindex``.  Per marker: its
        result, or the error that refused it (the others are written all the same)."""
        with self._lock, self._io():
            self._clock_ms = now_ms
            done: dict[int, AppendResult | MarkerError] = {}
            todo = list(range(len(markers)))
            while todo:
                r = marker_round(self._producers, markers, todo, self.log_end_offset, leader_epoch,
                                 self.config.max_message_bytes)
                if r.headers:
                    self._epochs.assign_leader_epoch(leader_epoch, r.headers[0].base_offset)
                    self._append_batches(r.records, r.headers, now_ms)
                done.update(r.refused)
                done.update((i, AppendResult(o, o, NO_TIMESTAMP, self.log_start_offset, NO_TIMESTAMP, 1))
                            for i, o in r.written.items())
                todo = r.deferred
            out = [done[i] for i in range(len(markers))]
            flush = self._flush_due()
        if flush:
            self.flush(now_ms)
        return out

    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Record that ``leader_epoch`` starts at ``start_offset`` (Kafka's
        maybeAssignEpochStartOffset, called when this replica becomes leader).

        A new epoch is added to the leader-epoch cache and written to leader-epoch-checkpoint
        by the next flush (``epoch_cache``); an epoch already the latest is left alone; an epoch below the
        latest raises AssertionError; a negative epoch is ignored.
        """
        with self._lock, self._io():
            self._epochs.assign_leader_epoch(leader_epoch, start_offset)

    def _append_batches(self, records, headers: list[BatchHeader], now_ms: int) -> None:
        """Write batches, rolling between groups that would overflow segment.bytes."""
        view = memoryview(records)
        position, i, count = 0, 0, len(headers)
        segment_bytes = self.config.segment_bytes
        while i < count:
            j, size, max_timestamp = i, 0, NO_TIMESTAMP
            while j < count and (j == i or size + headers[j].size <= segment_bytes):
                h = headers[j]
                size += h.size
                if h.max_timestamp > max_timestamp:
                    max_timestamp = h.max_timestamp
                j += 1
            segment = self._maybe_roll(size, max_timestamp, headers[i].base_offset, headers[j - 1].last_offset, now_ms)
            group = headers if i == 0 and j == count else headers[i:j]
            segment.append(view[position:position + size], group)
            markers = _markers(view, group, position)
            # after a roll's snapshot, which is of the state before
            ended = self._producers.update(group, markers)
            if ended:
                self._index_aborted(ended)
            position, i = position + size, j

    def _append_one(self, records, headers: list[BatchHeader], now_ms: int) -> None:
        """``_append_batches`` of one batch (a leader's append: ``check_produced`` allows no other;
        a follower's of one batch), written alone whatever its size, so no grouping."""
        h = headers[0]
        segment = self._maybe_roll(len(records), h.max_timestamp, h.base_offset, h.base_offset + h.last_offset_delta,
                                   now_ms)
        segment.append(records, headers)
        markers = _markers(memoryview(records), headers, 0) if h.attributes & CONTROL_BIT else None
        ended = self._producers.update(headers, markers)
        if ended:
            self._index_aborted(ended)

    # --- rolling -------------------------------------------------------------------------------

    def _maybe_roll(self, size: int, max_timestamp: int, first_offset: int, last_offset: int,
                    now_ms: int) -> LogSegment:
        active = self._segments[-1]
        if should_roll(active, self.config, self._roll_jitter_ms, size, max_timestamp, last_offset, now_ms):
            self._roll(max(first_offset, active.next_offset), now_ms)
        return self._segments[-1]

    def _roll(self, new_base: int, now_ms: int) -> None:
        old = self._segments[-1]
        if old.size == 0:
            self._segments.pop()
            self._bases.pop()
            old.delete_files()
        else:
            old.write_out_indexes()
            self._roll_flush_offset = new_base
            self._timed.due()
            self._snapshots.write(new_base, self._producers.snapshot())
        config = self.config
        segment = LogSegment.create(self.directory, new_base, config.index_interval_bytes, config.segment_index_bytes,
                                    now_ms)
        self._segments.append(segment)
        self._bases.append(new_base)
        self._dir_dirty = True
        self._jitter_active()

    def _jitter_active(self) -> None:
        self._roll_jitter_ms = roll_jitter_ms(self.config, self._rng)

    # --- reads -------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, upper_bound: int | None = None,
             min_one_batch: bool = True) -> ReadResult:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` unless
        ``min_one_batch`` lets the first batch exceed it; ``upper_bound`` is exclusive."""
        with self._lock, self._io():
            end = self.log_end_offset
            first = max(self.log_start_offset, self.local_log_start_offset)
            if offset < first or offset > end:
                raise OffsetOutOfRangeError(offset, first, end)
            stop = end if upper_bound is None else min(upper_bound, end)
            if offset >= stop:
                return _EMPTY
            return read_from(self._segments, self._segment_index(offset), offset, max(max_bytes, 0), stop,
                             min_one_batch)

    def _segment_index(self, offset: int) -> int:
        return segment_index(self._bases, offset)

    # --- tiered storage (KIP-405) ------------------------------------------------------------------

    def producer_snapshot_file(self, offset: int) -> Path | None:
        """The ``<offset>.snapshot`` file, if this log wrote one (at the roll to a segment based there)."""
        return self._snapshots.path(offset)

    def rebuild_from_remote(self, log_start_offset: int, local_log_start_offset: int,
                            epoch_entries: list[tuple[int, int]], producer_snapshot: bytes | None) -> None:
        """KIP-405's follower path ("buildRemoteLogAuxState"): an empty log at
        ``local_log_start_offset`` whose log start is ``log_start_offset``, with the epoch
        history and the producer state of the remote segment ending just below it."""
        entries = decode_snapshot(producer_snapshot) if producer_snapshot else []
        with self._lock, self._io():
            self._truncate_fully(local_log_start_offset, log_start_offset)
            self._epochs.rebuild_from_remote(epoch_entries, log_start_offset, local_log_start_offset)
            self._producers.rebuild((), entries)
            self._snapshots.write(local_log_start_offset, entries)

    # --- the log cleaner (``cleaner``) --------------------------------------------------------------

    def cleaning_view(self) -> CleaningView:
        """The segments and facts a clean starts from (taken under the lock)."""
        with self._lock, self._io():
            return CleaningView(list(self._segments), [s.size for s in self._segments], self.log_start_offset,
                                self.log_end_offset, self._producers.last_offsets(), self._truncations,
                                self.directory, [(s.max_timestamp, s.rolling_timestamp) for s in self._segments],
                                tuple(self._txn_index.entries()))

    def replace_segments(self, cleaned: LogSegment, replaced: list[LogSegment], truncations: int,
                         aborted: list | None = None) -> bool:
        """Swap the fsynced ``.cleaned`` segment in for ``replaced`` (consecutive, not the
        active one) the way ``swap_recovery`` describes, its ``.txnindex`` holding ``aborted``
        (the entries the cleaner kept); False, changing nothing, when the log moved on
        meanwhile (truncated, retention or another swap took one of them, renamed or closed)."""
        with self._lock, self._io():
            first = next((i for i, s in enumerate(self._segments) if s is replaced[0]), None)
            if (self._closed or truncations != self._truncations or first is None
                    or cleaned.directory != self.directory
                    or first + len(replaced) >= len(self._segments)
                    or any(a is not b for a, b in zip(self._segments[first:], replaced, strict=False))):
                return False
            cleaned.change_suffix(SWAP_SUFFIX)
            fsync_dir(self.directory)
            self._remove_segments(replaced, None)
            cleaned.change_suffix("")
            fsync_dir(self.directory)
            self._segments[first:first + len(replaced)] = [cleaned]
            self._bases[first:first + len(replaced)] = [cleaned.base_offset]
            self._txn_index.replace([s.base_offset for s in replaced], cleaned.base_offset, aborted or [])
            return True

    # --- retention and truncation ------------------------------------------------------------------

    def enforce_retention(self, now_ms: int, high_watermark: int | None = None) -> int:
        """Delete old segments per retention.ms / retention.bytes / log start; returns how many."""
        with self._lock, self._io():
            self._clock_ms = max(self._clock_ms, now_ms)
            deleted = 0
            for rule, remote in retention.rules(self.config, now_ms, self.highest_offset_in_remote_storage.value):
                predicate = rule(self._segments, self.log_start_offset)
                deleted += self._delete_prefix(predicate, high_watermark, remote, now_ms)
            return deleted

    def _delete_prefix(self, predicate, upper_bound: int | None, remote: int | None, now_ms: int) -> int:
        count = retention.deletable_prefix(self._segments, predicate, upper_bound, remote)
        if count:
            self._remove_segments(self._segments[:count], now_ms)
            del self._segments[:count]
            del self._bases[:count]
            self._after_start_moved()
            self._snapshots.delete_below(self._segments[0].base_offset)
            self._txn_index.drop_segments_below(self._segments[0].base_offset)
        return count

    def _after_start_moved(self) -> None:
        if not self.config.remote_storage_enable:
            self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
            self._epochs.truncate_from_start(self.log_start_offset)

    def increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start offset up (DeleteRecords, remote retention, follower sync)."""
        with self._lock, self._io():
            if offset > self.log_end_offset:
                raise OffsetOutOfRangeError(offset, self.log_start_offset, self.log_end_offset)
            if offset <= self.log_start_offset:
                return False
            self.log_start_offset = offset
            self._local_start_floor = max(self._local_start_floor, offset)
            self._epochs.truncate_from_start(offset)
            return True

    def truncate_to(self, offset: int) -> bool:
        """Drop every batch holding an offset >= ``offset``; True if anything was removed."""
        with self._lock, self._io():
            if offset < 0:
                raise ValueError(f"cannot truncate to negative offset {offset}")
            if offset >= self.log_end_offset:
                # Kafka's UnifiedLog.truncateTo trims the epoch cache even so: a replica that became
                # leader and lost leadership before appending keeps its epoch's entry at the log end,
                # which the new leader never had; left there it is every fetch's LastFetchedEpoch,
                # the leader answers DivergingEpoch each time, and the follower never catches up.
                self._epochs.truncate_from_end(self.log_end_offset)
                return False
            if offset < self._segments[0].base_offset:
                self._truncate_fully(offset, None)
                return True
            keep = bisect.bisect_right(self._bases, offset)
            self._remove_segments(self._segments[keep:], None)
            del self._segments[keep:]
            del self._bases[keep:]
            self._segments[-1].truncate_to(offset)
            end = self.log_end_offset
            self._epochs.truncate_from_end(end)
            self.log_start_offset = min(self.log_start_offset, end)
            self.recovery_point = min(self.recovery_point, end)
            self._truncations += 1
            self._snapshots.delete_above(end)
            self._rebuild_producers()
            self._jitter_active()
            return True

    def truncate_fully_and_start_at(self, offset: int, log_start_offset: int | None = None) -> None:
        """Replace the whole log by an empty one starting at ``offset`` (Kafka's truncateFullyAndStartAt)."""
        with self._lock, self._io():
            self._truncate_fully(offset, log_start_offset)

    def _truncate_fully(self, offset: int, log_start_offset: int | None) -> None:
        self._remove_segments(self._segments, None)
        config = self.config
        segment = LogSegment.create(self.directory, offset, config.index_interval_bytes, config.segment_index_bytes,
                                    self._latest_ms())
        self._segments = [segment]
        self._bases = [offset]
        self._epochs.clear()
        self._snapshots.delete_above(-1)
        self._txn_index.clear()
        self._producers.rebuild(())
        self.log_start_offset = offset if log_start_offset is None else log_start_offset
        self._local_start_floor = offset
        self.recovery_point = offset
        self._truncations += 1
        self._dir_dirty = True
        self._jitter_active()

    def _remove_segments(self, segments: list[LogSegment], now_ms: int | None) -> None:
        """Rename to ``.deleted`` now; close and remove after file.delete.delay.ms."""
        when = (self._latest_ms() if now_ms is None else now_ms) + self.config.file_delete_delay_ms
        for segment in segments:
            segment.mark_deleted()
            self._pending_deletes.append((when, segment))
        self._dir_dirty = self._dir_dirty or bool(segments)
        if segments:
            self._timed.due()

    # --- lifecycle --------------------------------------------------------------------------------

    def update_config(self, config: LogConfig) -> None:
        with self._lock, self._io():
            self.config = config
            self._timed.due()               # flush.ms may be finite now
            self._after_start_moved()       # not tiered: the log starts at its first segment at least
            for segment in self._segments:
                segment.index_interval_bytes = config.index_interval_bytes
            active = self._segments[-1]
            active.resize_indexes(config.segment_index_bytes)
            self._jitter_active()

    def rename_dir(self, directory: Path) -> None:
        """Move the partition directory (descriptors stay valid); used for async deletion."""
        with self._lock, self._io():
            self.directory.rename(directory)
            self.directory = directory
            self._snapshots.directory = directory
            self._txn_index.directory = directory
            self._epochs.path = directory / self._epochs.path.name
            for segment in self._segments + [s for _w, s in self._pending_deletes]:
                segment.move_to(directory)

    def close(self) -> None:
        """Write out indexes, flush, close descriptors, drop pending deletions."""
        with self._lock:
            online = not self._guard.offline
            if online:
                with self._io():
                    for segment in self._segments[self._segment_index(self.recovery_point):]:
                        segment.write_out_indexes()
                    self._snapshots.write(self.log_end_offset, self._producers.snapshot())
        try:
            if online:
                self.flush(self._latest_ms())
        finally:
            with self._lock:
                self._close_all()

    def close_handlers(self) -> None:
        """Close descriptors and write nothing (Kafka's closeHandlers): its log dir failed."""
        with self._lock:
            self._close_all()

    def delete(self) -> None:
        """Close and remove the whole partition directory now."""
        with self._lock:
            self._close_all()
            shutil.rmtree(self.directory, ignore_errors=True)

    def _close_all(self) -> None:
        with contextlib.suppress(OSError):
            for segment in self._segments:
                segment.close()
        for _when, segment in self._pending_deletes:
            with contextlib.suppress(OSError):
                segment.delete_files()
        self._pending_deletes = []
        self._guard.offline = True
        self._closed = True

    def _io(self) -> IoGuard:
        return self._guard

    def __repr__(self) -> str:
        return (f"Log({self.directory.name}, start={self.log_start_offset}, end={self.log_end_offset}, "
                f"segments={len(self._segments)})")


def _markers(view: memoryview, headers: list[BatchHeader], position: int) -> dict[int, tuple[int, int]] | None:
    """The (control type, coordinator epoch) of each control batch among ``headers`` (written from
    ``position`` of ``view`` on), by base offset; None when there is none (most appends)."""
    markers = None
    for h in headers:
        if h.attributes & CONTROL_BIT:
            if markers is None:
                markers = {}
            markers[h.base_offset] = read_marker(view[position:position + h.size], h)
        position += h.size
    return markers
