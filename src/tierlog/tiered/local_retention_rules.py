"""Which local segments of a tiered partition may be deleted (sans-IO).

Kafka's UnifiedLog rules for a log with remote storage on:

- Limits: ``local.retention.ms`` / ``local.retention.bytes`` (-2 means the
  matching ``retention.*``); with ``remote.log.copy.disable`` the local log
  falls back to ``retention.*``. -1 switches a limit off.
- Only the oldest segments go, never the active one, never one reaching at or
  past the high watermark, and -- while copying is on -- only a segment that
  lies wholly at or below the highest offset in remote storage (uploaded). A
  segment wholly below the log start offset may always go (the log no longer
  holds it).
- By time: now - the segment's max timestamp > the limit. By size: while the
  local log stays at or above the limit without the segment.

The walk itself is ``storage.retention``'s (the same as for local-only logs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tierlog.storage.retention import by_log_start, by_size, by_time, deletable_prefix
from tierlog.tiered.copy_rules import LocalSegment

__all__ = ["LocalRetention", "local_segments_to_delete"]

_USE_RETENTION = -2


@dataclass(frozen=True, slots=True)
class LocalRetention:
    retention_ms: int
    retention_bytes: int
    local_retention_ms: int = _USE_RETENTION
    local_retention_bytes: int = _USE_RETENTION
    copy_disabled: bool = False

    @property
    def effective_ms(self) -> int:
        if self.copy_disabled or self.local_retention_ms == _USE_RETENTION:
            return self.retention_ms
        return self.local_retention_ms

    @property
    def effective_bytes(self) -> int:
        if self.copy_disabled or self.local_retention_bytes == _USE_RETENTION:
            return self.retention_bytes
        return self.local_retention_bytes


def local_segments_to_delete(segments: Sequence[LocalSegment], limits: LocalRetention, *, now_ms: int,
                             high_watermark: int, highest_remote_offset: int,
                             log_start_offset: int) -> int:
    """How many leading ``segments`` (sorted, the last one active) may be deleted."""
    segments = list(segments)
    remote = None if limits.copy_disabled else highest_remote_offset
    count = deletable_prefix(segments, by_log_start(log_start_offset), high_watermark, None)
    rest = segments[count:]
    if limits.effective_ms >= 0:
        taken = deletable_prefix(rest, by_time(now_ms, limits.effective_ms), high_watermark, remote)
        count, rest = count + taken, rest[taken:]
    if limits.effective_bytes >= 0:
        count += deletable_prefix(rest, by_size(rest, limits.effective_bytes), high_watermark, remote)
    return count
