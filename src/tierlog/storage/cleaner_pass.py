"""Clean one log (Kafka's ``Cleaner.doClean``): the I/O around ``cleaner_rules``.

Runs on a log directory's cleaner thread (``cleaner_threads``), never on the event
loop, and holds the log's lock only twice per group: to take the segments
(``Log.cleaning_view``) and to swap a cleaned segment in (``Log.replace_segments``).
Reads and appends go on meanwhile; segments only below the active one are read,
whose bytes do not change until a truncation, which the swap detects.

1. Build the offset map from the dirty range [first dirty, first uncleanable):
   batches read in ``io_buffer_bytes`` chunks, CRC-checked, records decoded; the
   map stops before a batch whose keys would overflow it; aborted data adds no key
   (``cleaner_txn`` tells it from the log's ``.txnindex`` entries). The clean covers the
   offsets up to the map's latest offset (the new first dirty offset, returned).
2. Group the segments below that end (``group_segments``) and rewrite each group
   into ``<base>.log.cleaned`` batch by batch (``filter_batch``), building its
   indexes as it goes (aborted data dropped, markers given a delete horizon or
   dropped past it: ``cleaner_txn``); fsync it; swap it in with the ``.txnindex``
   entries of the ABORT markers it keeps whose data was still there. A group whose swap is refused (the
   log moved on) ends the clean: its files are deleted and the segments already
   swapped stay (each swap is complete on its own).

A batch whose records cannot be decoded (corrupt compressed data) is kept as it is.
``stopping`` (the cleaner shutting down) is checked at every batch: the clean stops
there, its unfinished ``.cleaned`` files deleted (Kafka's LogCleaningAbortedException).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tierlog.records.control import control_marker
from tierlog.records.decoder import decode_records
from tierlog.records.errors import CORRUPT_MESSAGE, InvalidRecordError
from tierlog.records.filtered import empty_batch, filtered_batch
from tierlog.records.header import (
    HEADER_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    BatchHeader,
    parse_header,
)
from tierlog.records.validate import validate_batch
from tierlog.storage.batch_scan import read_exact
from tierlog.storage.cleaner_rules import (
    OffsetMap,
    SegmentStat,
    filter_batch,
    group_segments,
)
from tierlog.storage.cleaner_txn import CleanedTransactions, aborted_overlapping
from tierlog.storage.results import CleaningView
from tierlog.storage.segment import LogSegment
from tierlog.storage.txn_index import AbortedTxn

__all__ = ["CleanAborted", "CleanResult", "clean_log"]

_log = logging.getLogger(__name__)


class CleanAborted(Exception):
    """The cleaner is stopping; raised between batches."""


@dataclass
class CleanResult:
    end_offset: int           # the new first dirty offset
    groups_swapped: int
    bytes_before: int
    bytes_after: int
    completed: bool           # False: a swap was refused, the clean stopped early


def _never() -> bool:
    return False


def clean_log(log, first_dirty: int, first_uncleanable: int, now_ms: int, offset_map: OffsetMap,
              io_buffer_bytes: int, stopping: Callable[[], bool] = _never) -> CleanResult:
    """Clean ``log`` (a ``Log``) below ``first_uncleanable`` with ``offset_map`` (empty);
    raises ``CleanAborted`` when ``stopping`` says so (the groups swapped so far stay)."""
    view = log.cleaning_view()
    end = _build_offset_map(view, first_dirty, first_uncleanable, offset_map, io_buffer_bytes, stopping)
    config = log.config
    stats = [SegmentStat(s.base_offset, size, 0) for s, size in zip(view.segments[:-1], view.sizes, strict=False)
             if s.base_offset < end]
    by_base = {s.base_offset: (s, size) for s, size in zip(view.segments, view.sizes, strict=False)}
    result = CleanResult(end, 0, 0, 0, True)
    bound = view.segments[len(stats)].base_offset      # the segment after the last one to rewrite
    for group in group_segments(stats, config.segment_bytes, bound):
        segments = [by_base[stat.base_offset] for stat in group]
        cleaned, aborted = _clean_group(log, segments, offset_map, now_ms, view, io_buffer_bytes, stopping)
        if not log.replace_segments(cleaned, [s for s, _ in segments], view.truncations, aborted):
            cleaned.delete_files()
            result.completed = False
            break
        result.groups_swapped += 1
        result.bytes_before += sum(size for _, size in segments)
        result.bytes_after += cleaned.size
    return result


def _build_offset_map(view: CleaningView, first_dirty: int, first_uncleanable: int, offset_map: OffsetMap,
                      io_buffer_bytes: int, stopping: Callable[[], bool] = _never) -> int:
    """Fill ``offset_map`` from the dirty range (aborted data adds no key); returns the end of the
    clean (exclusive)."""
    txns = CleanedTransactions()
    for segment, following, size in zip(view.segments[:-1], view.segments[1:], view.sizes, strict=False):
        if following.base_offset <= first_dirty:
            continue
        if segment.base_offset >= first_uncleanable:
            break
        txns.add_aborted(aborted_overlapping(view.aborted, segment.base_offset, following.base_offset))
        for _pos, header, data in _batches(segment, size, io_buffer_bytes):
            if header.base_offset >= first_uncleanable:
                break
            if stopping():
                raise CleanAborted
            records = _decode(data, header) if header.is_control or header.last_offset >= first_dirty else None
            aborted = _discard(txns, header, records)
            if header.last_offset < first_dirty:
                continue
            if aborted or header.is_control:
                offset_map.skip_batch(header)
                continue
            keys = 0 if records is None else sum(1 for r in records if r.key is not None)
            if len(offset_map) and not offset_map.room_for(keys):
                return max(first_dirty, offset_map.latest_offset + 1)
            if records is not None:
                offset_map.add_batch(header, records)
    return max(first_dirty, min(first_uncleanable, offset_map.latest_offset + 1))


def _discard(txns: CleanedTransactions, header: BatchHeader, records) -> bool:
    """``cleaner_txn``'s verdict: aborted data, or a marker that may go."""
    if header.is_control:
        return txns.on_marker(header, _control_type(records))
    return txns.on_batch(header)


def _control_type(records) -> int | None:
    """ABORT / COMMIT, -1 for another control type or an undecodable batch, None for no record."""
    if records is not None and not records:
        return None
    found = control_marker(records) if records else None
    return -1 if found is None else found


def _clean_group(log, segments: list[tuple[LogSegment, int]], offset_map: OffsetMap, now_ms: int,
                 view: CleaningView, io_buffer_bytes: int,
                 stopping: Callable[[], bool] = _never) -> tuple[LogSegment, list[AbortedTxn]]:
    """Write the ``.cleaned`` segment replacing ``segments`` (flushed, not yet swapped); with the
    aborted transactions its ``.txnindex`` keeps."""
    config = log.config
    first = segments[0][0]
    cleaned = LogSegment.create_cleaned(view.directory, first.base_offset, config.index_interval_bytes,
                                        config.segment_index_bytes, now_ms)
    bases = [s.base_offset for s in view.segments]
    txns = CleanedTransactions()
    try:
        out = _Output(cleaned, io_buffer_bytes)
        for i, (segment, size) in enumerate(segments):
            last_segment = i == len(segments) - 1
            following = bases[bases.index(segment.base_offset) + 1]
            txns.add_aborted(aborted_overlapping(view.aborted, segment.base_offset, following))
            for pos, header, data in _batches(segment, size, io_buffer_bytes):
                if stopping():
                    raise CleanAborted
                group_last = last_segment and pos + header.size >= size
                out.add(_cleaned_batch(header, data, offset_map, now_ms, config.delete_retention_ms,
                                       group_last or view.producer_last_offsets.get(header.producer_id)
                                       == header.last_offset, txns))
        out.finish()
        cleaned.write_out_indexes()
        cleaned.flush()
    except BaseException:
        cleaned.delete_files()
        raise
    return cleaned, txns.retained


def _cleaned_batch(header: BatchHeader, data, offset_map: OffsetMap, now_ms: int, delete_retention_ms: int,
                   retain_empty: bool, txns: CleanedTransactions) -> bytes | None:
    """The bytes that replace one batch (None: dropped)."""
    records = _decode(data, header) if header.is_control or header.base_offset <= offset_map.latest_offset \
        else None
    discard = _discard(txns, header, records)
    if header.base_offset > offset_map.latest_offset and not discard and not header.is_control:
        return bytes(data)
    if records is None:
        records = _decode(data, header)
    if records is None:
        return bytes(data)
    verdict = filter_batch(header, records, offset_map, now_ms, delete_retention_ms, retain_empty, discard)
    if verdict.copy:
        return bytes(data)
    if verdict.records:
        return filtered_batch(header, verdict.records, verdict.delete_horizon_ms)
    return empty_batch(header) if verdict.keep_empty else None


def _decode(data, header: BatchHeader):
    try:
        return decode_records(data, header)
    except InvalidRecordError as exc:
        _log.warning("log cleaner: keeping undecodable batch at offset %d as it is: %s", header.base_offset, exc)
        return None


class _Output:
    """Buffers cleaned batches and appends them to the cleaned segment in chunks."""

    def __init__(self, segment: LogSegment, limit: int) -> None:
        self.segment = segment
        self.limit = limit
        self.buffer = bytearray()
        self.headers: list[BatchHeader] = []

    def add(self, batch: bytes | None) -> None:
        if batch is None:
            return
        self.buffer += batch
        self.headers.append(parse_header(batch))
        if len(self.buffer) >= self.limit:
            self.finish()

    def finish(self) -> None:
        if self.headers:
            self.segment.append(self.buffer, self.headers)
            self.buffer = bytearray()
            self.headers = []


def _batches(segment: LogSegment, size: int, chunk: int) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """(position, header, bytes) of each batch in the first ``size`` bytes of ``segment``,
    read ``chunk`` bytes at a time (a larger batch in one read), each CRC-checked."""
    pos = 0
    while pos < size:
        buf = read_exact(segment.fd, min(max(chunk, HEADER_SIZE), size - pos), pos)
        view = memoryview(buf)
        offset = 0
        while offset + HEADER_SIZE <= len(view):
            needed = int.from_bytes(view[offset + LENGTH_OFFSET:offset + LENGTH_OFFSET + 4], "big") + LOG_OVERHEAD
            if offset + needed > len(view):
                break
            header = validate_batch(view, offset)
            yield pos + offset, header, view[offset:offset + header.size]
            offset += header.size
        if offset == 0:
            if len(view) < HEADER_SIZE:
                raise InvalidRecordError(CORRUPT_MESSAGE, f"truncated batch at position {pos} of {segment.log_path}")
            needed = int.from_bytes(view[LENGTH_OFFSET:LENGTH_OFFSET + 4], "big") + LOG_OVERHEAD
            whole = memoryview(read_exact(segment.fd, needed, pos))
            if len(whole) < needed or needed < HEADER_SIZE:
                raise InvalidRecordError(CORRUPT_MESSAGE, f"truncated batch at position {pos} of {segment.log_path}")
            header = validate_batch(whole, 0)
            yield pos, header, whole[:header.size]
            offset = header.size
        pos += offset
