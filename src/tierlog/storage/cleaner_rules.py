"""The log cleaner's rules, sans-IO (Kafka's LogCleanerManager + Cleaner decisions).

Which log, which range (``log_to_clean``), per log of a ``cleanup.policy=compact``
topic, from its segments (oldest first, the last one active), its log start and
end offsets, the checkpointed first dirty offset and the upper limit the log gives
(its high watermark; None: unknown):

- first dirty offset: the checkpointed one; below the log start or above the log
  end it is reset to the log start (and the checkpoint rewritten);
- first uncleanable offset: the least of the active segment's base, the upper
  limit (the last stable offset: no undecided transaction is ever cleaned) and, with ``min.compaction.lag.ms`` > 0, the base of
  the first non-active segment from the first dirty one whose largest timestamp is newer than
  now - min.compaction.lag.ms; never below the first dirty offset; then rounded
  down to the base of the segment holding it. So the active segment, and any
  segment holding an offset at or above the upper limit, is never cleaned;
- cleanable bytes: the segments from the one holding the first dirty offset up to
  the first uncleanable offset; clean bytes: those from the log start to the first
  dirty offset; dirty ratio = cleanable / (clean + cleanable);
- a log is cleaned when its ratio exceeds ``min.cleanable.dirty.ratio`` or, with
  cleanable bytes, when its oldest dirty non-active segment's first batch timestamp
  is older than now - ``max.compaction.lag.ms`` (``should_clean``); the filthiest
  (highest ratio) goes first (``filthiest``).

What survives a clean (``keep_record``, ``filter_batch``): the offset map holds,
for the dirty range, each key's latest offset (``OffsetMap``, bounded: when full
the clean stops at the last offset it holds, and records past that are kept as
they are). Then every segment below that end is rewritten:

- a record is kept when its offset is the latest for its key (or its key is not
  in the map: only in the clean section), and, if it is a tombstone (null value),
  its batch has no delete horizon yet or the horizon is still in the future;
- a record without a key is dropped (Kafka counts it invalid; produce rejects them);
- a batch keeping every record and needing no new horizon is copied as it is;
  otherwise it is rewritten with what it keeps (new CRC, same offsets); a batch
  keeping a tombstone and having no delete horizon gets now + delete.retention.ms
  (KIP-534: attribute bit 6, baseTimestamp), so a tombstone lives at least
  delete.retention.ms after the clean that first saw it and goes at a later clean;
- a batch keeping nothing is dropped, except (kept as an empty header-only batch)
  the last batch of an idempotent producer (its sequence must survive) and the last
  batch of each group of segments rewritten together (so the cleaned segment ends
  at the same offset as the segments it replaces, which recovery relies on);
- transactions (``cleaner_txn``, Kafka's CleanedTransactionMetadata): a batch of
  aborted data is dropped whole (kept as an empty batch when it is its producer's
  last); committed transactional data is compacted like any other; a marker whose
  transaction has no data left here gets a delete horizon of now +
  delete.retention.ms and is dropped by the first clean past it; other control
  batches are kept whole.

Groups (``group_segments``): consecutive segments from the start whose total size
stays within segment.bytes and whose offset span fits the int32 relative offsets
are rewritten into one cleaned segment based at the first one's base.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from tierlog.records.header import NO_TIMESTAMP, BatchHeader
from tierlog.records.record import Record

__all__ = [
    "MAP_ENTRY_BYTES",
    "BatchVerdict",
    "LogToClean",
    "OffsetMap",
    "SegmentStat",
    "filter_batch",
    "filthiest",
    "group_segments",
    "keep_record",
    "log_to_clean",
    "should_clean",
]

INT32_MAX = 2**31 - 1
MAP_ENTRY_BYTES = 128    # memory one offset-map entry costs here (16-byte MD5 key, int, dict slot)


@dataclass(frozen=True)
class SegmentStat:
    """What the rules need of one segment."""

    base_offset: int
    size: int
    largest_timestamp: int            # for min.compaction.lag.ms
    first_batch_timestamp: int = NO_TIMESTAMP    # for max.compaction.lag.ms


@dataclass(frozen=True)
class LogToClean:
    first_dirty_offset: int
    first_uncleanable_offset: int     # a segment base; segments below it (from the dirty one) are cleanable
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool        # max.compaction.lag.ms passed for dirty data
    reset_checkpoint: bool            # the checkpointed offset was out of range

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def _floor_index(segments: Sequence[SegmentStat], offset: int) -> int:
    index = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= offset:
            index = i
    return index


def log_to_clean(segments: Sequence[SegmentStat], log_start_offset: int, log_end_offset: int,
                 checkpoint: int | None, upper_limit: int | None, min_lag_ms: int, max_lag_ms: int,
                 now_ms: int) -> LogToClean:
    """The cleanable range of one log (module docstring: "Which log, which range")."""
    first_dirty = log_start_offset if checkpoint is None else checkpoint
    reset = first_dirty < log_start_offset or first_dirty > log_end_offset
    if reset:
        first_dirty = log_start_offset
    active = len(segments) - 1
    dirty_index = _floor_index(segments, first_dirty)
    limits = [segments[active].base_offset]
    if upper_limit is not None:
        limits.append(upper_limit)
    if min_lag_ms > 0:
        young = next((s.base_offset for s in segments[dirty_index:active]
                      if s.largest_timestamp > now_ms - min_lag_ms), None)
        if young is not None:
            limits.append(young)
    uncleanable = max(first_dirty, min(limits))
    first_uncleanable = segments[min(_floor_index(segments, uncleanable), active)].base_offset
    cleanable = sum(s.size for s in segments[dirty_index:] if s.base_offset < first_uncleanable)
    clean = sum(s.size for i, s in enumerate(segments)
                if s.base_offset < first_dirty and _ends_after(segments, i, log_start_offset))
    return LogToClean(first_dirty, first_uncleanable, clean, cleanable,
                      _needs_now(segments[dirty_index:active], max_lag_ms, now_ms), reset)


def _ends_after(segments: Sequence[SegmentStat], i: int, offset: int) -> bool:
    """Whether segment ``i`` holds offsets at or above ``offset`` (its end is the next base)."""
    return i + 1 >= len(segments) or segments[i + 1].base_offset > offset


def _needs_now(dirty: Sequence[SegmentStat], max_lag_ms: int, now_ms: int) -> bool:
    stamps = [s.first_batch_timestamp for s in dirty if s.first_batch_timestamp > 0]
    return bool(stamps) and min(stamps) < now_ms - max(max_lag_ms, 0)


def should_clean(log: LogToClean, min_cleanable_ratio: float) -> bool:
    if log.total_bytes == 0:
        return False
    return (log.needs_compaction_now and log.cleanable_bytes > 0) or log.cleanable_ratio > min_cleanable_ratio


_Log = TypeVar("_Log")   # what the caller names a candidate log by


def filthiest(candidates: Sequence[tuple[_Log, LogToClean]]) -> tuple[_Log, LogToClean] | None:
    """The candidate with the highest dirty ratio (the first on ties), None if none."""
    best = None
    for candidate in candidates:
        if best is None or candidate[1].cleanable_ratio > best[1].cleanable_ratio:
            best = candidate
    return best


class OffsetMap:
    """Key -> latest offset for the dirty range, keys hashed with MD5 like Kafka's
    SkimpyOffsetMap; at most ``capacity`` keys (``from_buffer`` sizes it)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    @classmethod
    def from_buffer(cls, buffer_bytes: int, load_factor: float = 0.9) -> OffsetMap:
        """log.cleaner.dedupe.buffer.size (per cleaner) and its load factor."""
        return cls(int(buffer_bytes * load_factor) // MAP_ENTRY_BYTES)

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.capacity

    def room_for(self, keys: int) -> bool:
        """Whether ``keys`` more distinct keys would fit."""
        return len(self._offsets) + keys <= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[hashlib.md5(key).digest()] = offset
        self.latest_offset = max(self.latest_offset, offset)

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, -1 if absent."""
        return self._offsets.get(hashlib.md5(key).digest(), -1)

    def skip_batch(self, header: BatchHeader) -> None:
        """A batch read that adds no key (a marker, aborted data): the map still covers its offsets."""
        self.latest_offset = max(self.latest_offset, header.last_offset)

    def add_batch(self, header: BatchHeader, records: Sequence[Record]) -> None:
        """Record a batch's keys (control batches hold no data keys)."""
        if header.is_control:
            self.latest_offset = max(self.latest_offset, header.last_offset)
            return
        for record in records:
            if record.key is not None:
                self.put(record.key, record.offset)
        self.latest_offset = max(self.latest_offset, header.last_offset)


def keep_record(record: Record, offset_map: OffsetMap, delete_horizon_ms: int, now_ms: int) -> bool:
    """Kafka's Cleaner.shouldRetainRecord for v2 batches (``delete_horizon_ms`` -1: none)."""
    if record.offset > offset_map.latest_offset:
        return True
    if record.key is None:
        return False
    latest = record.offset >= offset_map.get(record.key)
    if record.value is not None:
        return latest
    return latest and (delete_horizon_ms == NO_TIMESTAMP or now_ms < delete_horizon_ms)


class BatchVerdict(NamedTuple):
    """What becomes of one batch: ``copy`` the original bytes, or ``records`` to rewrite
    (with ``delete_horizon_ms``), or an empty batch (``keep_empty`` with no records), or
    nothing (no records, not ``keep_empty``)."""

    copy: bool
    records: list[Record]
    delete_horizon_ms: int
    keep_empty: bool


def filter_batch(header: BatchHeader, records: Sequence[Record], offset_map: OffsetMap, now_ms: int,
                 delete_retention_ms: int, retain_empty: bool, discard: bool = False) -> BatchVerdict:
    """The verdict on one batch (module docstring: "What survives a clean").

    ``retain_empty``: the batch is an idempotent producer's last, or the group's last.
    ``discard`` (``cleaner_txn``): aborted data, or a marker that may go.
    """
    if header.is_control:
        return _marker_verdict(header, records, now_ms, delete_retention_ms, retain_empty, discard)
    if discard:
        return BatchVerdict(False, [], NO_TIMESTAMP, retain_empty)
    horizon = header.base_timestamp if header.has_delete_horizon else NO_TIMESTAMP
    kept = [record for record in records if keep_record(record, offset_map, horizon, now_ms)]
    if not kept:
        return BatchVerdict(False, [], NO_TIMESTAMP, retain_empty)
    needs_horizon = not header.has_delete_horizon and any(record.value is None for record in kept)
    if needs_horizon:
        horizon = now_ms + delete_retention_ms
    if len(kept) == len(records) and not needs_horizon:
        return BatchVerdict(True, kept, horizon, retain_empty)
    return BatchVerdict(False, kept, horizon, retain_empty)


def _marker_verdict(header: BatchHeader, records: Sequence[Record], now_ms: int, delete_retention_ms: int,
                    retain_empty: bool, discard: bool) -> BatchVerdict:
    """A control batch: kept as it is, unless it may go: then it gets a delete horizon first and
    goes at the first clean past it (Kafka's Cleaner.checkBatchRetention)."""
    if not discard:
        return BatchVerdict(True, list(records), NO_TIMESTAMP, retain_empty)
    if not header.has_delete_horizon:
        return BatchVerdict(False, list(records), now_ms + delete_retention_ms, retain_empty)
    if header.base_timestamp <= now_ms:
        return BatchVerdict(False, [], NO_TIMESTAMP, retain_empty)
    return BatchVerdict(True, list(records), header.base_timestamp, retain_empty)


def group_segments(segments: Sequence[SegmentStat], max_size: int, end_offset: int) -> list[list[SegmentStat]]:
    """Consecutive groups to rewrite together (Kafka's groupSegmentsBySize): each
    within ``max_size`` bytes (a single larger segment is its own group) and spanning
    fewer than 2^31 offsets; ``end_offset`` bounds the last segment's offsets."""
    groups: list[list[SegmentStat]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size
        i += 1
        while i < len(segments) and size + segments[i].size <= max_size:
            last = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else end_offset - 1
            if segments[i].size and last - group[0].base_offset > INT32_MAX:
                break
            group.append(segments[i])
            size += segments[i].size
            i += 1
        groups.append(group)
    return groups
