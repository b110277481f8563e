"""Reads and offset lookups inside one segment, answered from headers and indexes.

Only ``record_timestamps`` decodes records: ListOffsets by timestamp and max
timestamp narrow the search to one batch and then look inside it, as Kafka does.
"""

from __future__ import annotations

from tierlog.records.decoder import decode_records
from tierlog.records.errors import InvalidRecordError
from tierlog.records.header import BatchHeader
from tierlog.storage.results import FileRegion
from tierlog.storage.segment import LogSegment

__all__ = ["max_timestamp_in", "read_segment", "record_timestamps", "search_timestamp"]


def read_segment(segment: LogSegment, offset: int, budget: int, stop: int,
                  allow_oversize: bool) -> tuple[FileRegion | None, bool]:
    """(region of whole batches from ``offset``, whether the read is complete)."""
    found = segment.locate(offset)
    if found is None:
        return None, False
    start, header = found
    if header.base_offset >= stop:
        return None, True
    stop_found = segment.locate(stop) if stop < segment.next_offset else None
    bound = stop_found[0] if stop_found else segment.size
    end = segment.boundary_at_or_before(start, min(bound, start + budget))
    if end == start:
        if not (allow_oversize and start < bound):
            return None, True
        end = start + header.size
    return FileRegion(segment.file, start, end - start), end < segment.size


def search_timestamp(segment: LogSegment, timestamp: int, start_offset: int) -> tuple[int, int, int] | None:
    position = segment.find_by_timestamp_floor(timestamp, start_offset)
    for pos, header in segment.batches_from(position):
        if header.max_timestamp >= timestamp and header.last_offset >= start_offset:
            for offset, record_ts in record_timestamps(segment, pos, header):
                if record_ts >= timestamp and offset >= start_offset:
                    return offset, record_ts, header.partition_leader_epoch
    return None


def max_timestamp_in(segment: LogSegment) -> tuple[int, int, int] | None:
    target = segment.max_timestamp
    position = segment.position_floor(segment.offset_of_max_timestamp)
    for pos, header in segment.batches_from(position):
        if header.max_timestamp == target:
            for offset, record_ts in record_timestamps(segment, pos, header):
                if record_ts == target:
                    return offset, target, header.partition_leader_epoch
            return header.last_offset, target, header.partition_leader_epoch
    return None


def record_timestamps(segment: LogSegment, position: int, header: BatchHeader) -> list[tuple[int, int]]:
    """(offset, timestamp) of each record; batch level (base offset, max) if undecodable."""
    try:
        records = decode_records(memoryview(segment.read_batch(position, header)), header)
    except InvalidRecordError:
        return [(header.base_offset, header.max_timestamp)]
    return [(record.offset, record.timestamp) for record in records]
