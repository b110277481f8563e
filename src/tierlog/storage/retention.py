"""Which old segments retention may delete (Kafka's UnifiedLog.deletableSegments).

Candidates are taken oldest first and the walk stops at the first segment that
does not qualify. The active (last) segment is never a candidate. A segment is
only deletable when all of its offsets are below ``upper_bound`` (the high
watermark when the caller knows it) and, for tiered topics, already uploaded
(its last offset <= the highest offset in remote storage).

Rules, each applied to what the previous ones left:

- retention.ms: now - largest timestamp (file mtime if none) > retention.ms;
- retention.bytes: while the log stays at or above retention.bytes without it;
- log start: the segment ends at or below the log start offset.

Tiered topics use local.retention.ms / local.retention.bytes for the first two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from tierlog.storage.log_config import LogConfig

__all__ = ["RetainedSegment", "by_log_start", "by_size", "by_time", "deletable_prefix", "rules"]


class RetainedSegment(Protocol):
    """What the rules read of a segment: a local ``LogSegment`` or the tiered rules' ``LocalSegment``."""

    @property
    def base_offset(self) -> int: ...

    @property
    def size(self) -> int: ...

    def largest_timestamp_or_mtime(self) -> int: ...


Predicate = Callable[[RetainedSegment, int], bool]  # (segment, its exclusive end offset)
Rule = Callable[[Sequence[RetainedSegment], int], Predicate]  # (segments left, log start offset) -> predicate


def rules(config: LogConfig, now_ms: int, highest_remote_offset: int) -> list[tuple[Rule, int | None]]:
    """The rules in order, each with the highest remote offset its segments must be
    below (None: no such bound); a rule's predicate is built for what the previous left."""
    tiered = config.remote_storage_enable
    remote = highest_remote_offset if tiered else None
    out: list[tuple[Rule, int | None]] = []
    if config.delete_enabled:
        ms = config.local_retention_ms if tiered else config.retention_ms
        size = config.local_retention_bytes if tiered else config.retention_bytes
        if ms >= 0:
            out.append((lambda _segments, _start: by_time(now_ms, ms), remote))
        if size >= 0:
            out.append((lambda segments, _start: by_size(segments, size), remote))
    out.append((lambda _segments, start: by_log_start(start), None))
    return out


def deletable_prefix(
    segments: Sequence[RetainedSegment],
    predicate: Predicate,
    upper_bound: int | None,
    highest_remote_offset: int | None,
) -> int:
    """How many leading segments (never the last) may be deleted."""
    count = 0
    for i in range(len(segments) - 1):
        end = segments[i + 1].base_offset
        if upper_bound is not None and end > upper_bound:
            break
        if highest_remote_offset is not None and end - 1 > highest_remote_offset:
            break
        if not predicate(segments[i], end):
            break
        count += 1
    return count


def by_time(now_ms: int, retention_ms: int) -> Predicate:
    return lambda segment, _end: now_ms - segment.largest_timestamp_or_mtime() > retention_ms


def by_size(segments: Sequence[RetainedSegment], retention_bytes: int) -> Predicate:
    excess = sum(segment.size for segment in segments) - retention_bytes

    def predicate(segment: RetainedSegment, _end: int) -> bool:
        nonlocal excess
        if excess - segment.size < 0:
            return False
        excess -= segment.size
        return True

    return predicate


def by_log_start(log_start_offset: int) -> Predicate:
    return lambda _segment, end: end <= log_start_offset
