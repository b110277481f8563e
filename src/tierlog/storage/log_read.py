"""Reads and lookups across a log's segments (the callers hold the log's lock).

``segments`` is the log's list, oldest first, and ``bases`` their base offsets;
each function walks them and leaves the in-segment work to ``lookup``.
``SegmentInfo`` is what the tiered-storage uploader sees of a segment.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tierlog.records.header import NO_TIMESTAMP, TimestampType
from tierlog.storage.files import INDEX_SUFFIX, TIME_INDEX_SUFFIX, segment_file
from tierlog.storage.lookup import max_timestamp_in, read_segment, search_timestamp
from tierlog.storage.results import FileRegion, ReadResult
from tierlog.storage.segment import LogSegment

__all__ = ["SegmentInfo", "first_timestamp", "max_timestamp_offset", "offset_for_timestamp", "read_from",
           "segment_index", "segment_infos"]


@dataclass(frozen=True)
class SegmentInfo:
    """A segment as the tiered-storage uploader sees it."""

    base_offset: int
    next_offset: int  # exclusive
    size: int
    max_timestamp: int
    log_path: Path
    index_path: Path
    time_index_path: Path
    active: bool


def segment_index(bases: Sequence[int], offset: int) -> int:
    """Index of the segment holding ``offset`` (the first one for offsets below it)."""
    return max(0, bisect.bisect_right(bases, offset) - 1)


def read_from(segments: Sequence[LogSegment], first: int, offset: int, max_bytes: int, stop: int,
              min_one_batch: bool) -> ReadResult:
    """Whole batches from ``offset`` (in ``segments[first]``) below ``stop``, within ``max_bytes``."""
    parts: list[FileRegion] = []
    total = 0
    for segment in segments[first:]:
        region, done = read_segment(segment, max(offset, segment.base_offset), max_bytes - total, stop,
                                    min_one_batch and not parts)
        if region is not None:
            parts.append(region)
            total += region.length
        if done:
            break
    return ReadResult(parts, total)


def first_timestamp(segments: Sequence[LogSegment], first: int, start: int) -> int:
    """Timestamp of the batch holding ``start`` (KIP-1303 LocalLogStartTimestamp), -1 if none.

    KIP-1303, "Tracking Local Log State" / "Broker Side Changes": the timestamp of
    the earliest record in the local log, "derived from the time index for the local
    log start offset". Read from the header of the batch holding the local log start
    offset (one index lookup and one header read, no record decoding): its base
    timestamp (the first record's, CreateTime) or, for LogAppendTime batches, its max
    timestamp (the append time every record of the batch carries). Retention that
    deletes the first local segments moves it forward ("Handling Log Retention
    Changes").
    """
    for segment in segments[first:]:
        if segment.size == 0:
            continue
        found = segment.locate(max(start, segment.base_offset))
        if found is not None:
            header = found[1]
            if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
                return header.max_timestamp
            return header.base_timestamp
    return NO_TIMESTAMP


def offset_for_timestamp(segments: Sequence[LogSegment], timestamp: int, start: int) -> tuple[int, int, int] | None:
    for segment in segments:
        if segment.size == 0 or segment.max_timestamp < timestamp:
            continue
        found = search_timestamp(segment, timestamp, start)
        if found is not None:
            return found
    return None


def max_timestamp_offset(segments: Sequence[LogSegment]) -> tuple[int, int, int] | None:
    best = None
    for segment in segments:
        if segment.size and (best is None or segment.max_timestamp > best.max_timestamp):
            best = segment
    if best is None or best.max_timestamp == NO_TIMESTAMP:
        return None
    return max_timestamp_in(best)


def segment_infos(segments: Sequence[LogSegment]) -> list[SegmentInfo]:
    last = len(segments) - 1
    return [
        SegmentInfo(s.base_offset, s.next_offset if i == last else segments[i + 1].base_offset, s.size,
                    s.max_timestamp, s.log_path, segment_file(s.directory, s.base_offset, INDEX_SUFFIX),
                    segment_file(s.directory, s.base_offset, TIME_INDEX_SUFFIX), i == last)
        for i, s in enumerate(segments)
    ]
