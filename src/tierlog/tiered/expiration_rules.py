"""Which remote segments to expire, and the log start offset to set first (sans-IO).

Kafka's RLMExpirationTask over the partition's remote segments in offset order:

- A segment whose last epoch is newer than the leader's last epoch is left alone and
  out of everything below: this broker is a stale leader that has not yet learnt of
  its successor, and the segment is the successor's (deleting it as outside the
  lineage lost a segment of acknowledged records to the nemesis soak; Kafka deletes
  as unreferenced only segments older than the leader's earliest epoch).
- A COPY_SEGMENT_FINISHED segment outside the leader's epoch lineage
  (``lineage.within_leader_epochs``: a zombie upload of an old leader whose log
  diverged) is unreferenced: it is deleted and left out of everything below.
- A COPY_SEGMENT_FINISHED segment whose offsets other finished segments hold
  (a second upload of the same offsets) is deleted and left out of everything
  below (``overlap_rules``): remote segments never overlap after a pass.
- A DELETE_SEGMENT_STARTED segment is deleted again (an earlier delete failed).
- A segment being copied right now stops the walk.
- Otherwise a segment goes when its end offset is below the log start offset,
  or when ``max_timestamp_ms <= now_ms - retention.ms``, or while the partition
  is over ``retention.bytes``: total = local-only bytes (local segments not in
  remote storage) + bytes of the COPY_SEGMENT_FINISHED remote segments kept; a segment
  goes if the excess minus its size stays >= 0 (a time-expired segment also
  lowers the excess). The walk stops at the first segment that stays.
- Retention (time or size) never takes a segment reaching at or above the
  leader's high watermark: the walk stops there. A new leader's high watermark
  may lag the old leader's uploads; expiring such a segment would leave
  committed records in [log start, high watermark) in neither tier once local
  retention follows the highest offset in remote storage. So the log start
  never passes the high watermark, and [log start, high watermark) stays
  covered by local + remote.
- A segment expired by time or size raises the log start offset to its end
  offset + 1. The caller moves the log start offset (and tells followers)
  BEFORE it deletes: DELETE_SEGMENT_STARTED, storage delete,
  DELETE_SEGMENT_FINISHED.

``retention.ms`` / ``retention.bytes`` of -1 switch that rule off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tierlog.tiered.lineage import within_leader_epochs
from tierlog.tiered.overlap_rules import redundant_segments
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
)

__all__ = ["ExpirationPlan", "PartitionLog", "RetentionLimits", "plan_remote_expiration"]

_S = RemoteLogSegmentState


@dataclass(frozen=True, slots=True)
class RetentionLimits:
    retention_ms: int            # -1: no time limit
    retention_bytes: int         # -1: no size limit


@dataclass(frozen=True, slots=True)
class PartitionLog:
    """What expiration needs to know of the leader's log."""

    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    epoch_entries: tuple[tuple[int, int], ...] = ()     # (epoch, start offset); empty: lineage unknown


@dataclass(frozen=True, slots=True)
class ExpirationPlan:
    new_log_start_offset: int | None               # set BEFORE deleting; None: unchanged
    to_delete: tuple[RemoteLogSegmentMetadata, ...]


class _Budget:
    """The retention.bytes excess left to remove."""

    def __init__(self, excess: int) -> None:
        self.excess = excess

    def take(self, size: int) -> bool:
        if self.excess > 0 and self.excess - size >= 0:
            self.excess -= size
            return True
        return False


def plan_remote_expiration(segments: Sequence[RemoteLogSegmentMetadata], limits: RetentionLimits, *,
                           now_ms: int, log: PartitionLog, only_local_bytes: int,
                           being_copied: frozenset[RemoteLogSegmentId] = frozenset()) -> ExpirationPlan:
    """The plan for ``segments`` (every live segment of the partition, sorted by start offset)."""
    segments = _without(segments, [m for m in segments if _from_a_newer_leader(m, log.epoch_entries)])
    zombies = [m for m in segments if m.state == _S.COPY_SEGMENT_FINISHED
               and not within_leader_epochs(m, log.epoch_entries, log.log_end_offset)]
    segments = _without(segments, zombies)
    redundant = redundant_segments([m for m in segments if m.state == _S.COPY_SEGMENT_FINISHED],
                                   log.log_start_offset)
    segments = _without(segments, redundant)
    new_start, chosen = _walk(segments, limits, now_ms, log, only_local_bytes, being_copied)
    return ExpirationPlan(new_start, tuple(chosen + zombies + redundant))


def _from_a_newer_leader(m: RemoteLogSegmentMetadata, epoch_entries: Sequence[tuple[int, int]]) -> bool:
    """A segment whose last epoch is newer than this log's last one: this broker is the stale
    one (it has not yet heard that it lost leadership), and the segment is its successor's."""
    return bool(epoch_entries) and bool(m.segment_leader_epochs) and \
        m.segment_leader_epochs[-1][0] > epoch_entries[-1][0]


def _without(segments: Sequence[RemoteLogSegmentMetadata],
             gone: Sequence[RemoteLogSegmentMetadata]) -> list[RemoteLogSegmentMetadata]:
    ids = {m.segment_id for m in gone}
    return [m for m in segments if m.segment_id not in ids]


def _walk(segments: Sequence[RemoteLogSegmentMetadata], limits: RetentionLimits, now_ms: int, log: PartitionLog,
          only_local_bytes: int, being_copied: frozenset[RemoteLogSegmentId]
          ) -> tuple[int | None, list[RemoteLogSegmentMetadata]]:
    """Retention's walk from the oldest segment: the new log start (None: unchanged) and what goes."""
    budget = _Budget(_excess(segments, limits, only_local_bytes))
    cutoff = now_ms - limits.retention_ms if limits.retention_ms >= 0 else None
    log_start_offset = log.log_start_offset
    new_start: int | None = None
    chosen: list[RemoteLogSegmentMetadata] = []
    for meta in segments:
        if meta.segment_id in being_copied:
            break
        if meta.state == _S.DELETE_SEGMENT_STARTED:
            chosen.append(meta)
            continue
        if meta.end_offset < log_start_offset:
            chosen.append(meta)
            continue
        if meta.end_offset >= log.high_watermark:
            break
        if cutoff is not None and meta.max_timestamp_ms <= cutoff:
            budget.excess = max(0, budget.excess - meta.segment_size_in_bytes)
        elif not budget.take(meta.segment_size_in_bytes):
            break
        chosen.append(meta)
        new_start = max(new_start or 0, meta.end_offset + 1)
    if new_start is not None and new_start <= log_start_offset:
        new_start = None
    return new_start, chosen


def _excess(segments: Sequence[RemoteLogSegmentMetadata], limits: RetentionLimits, only_local_bytes: int) -> int:
    if limits.retention_bytes < 0:
        return 0
    remote = sum(m.segment_size_in_bytes for m in segments if m.state == _S.COPY_SEGMENT_FINISHED)
    return max(0, only_local_bytes + remote - limits.retention_bytes)
