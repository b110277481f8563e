"""Which part of an offset range is read straight from remote storage (sans-IO).

A partition's requested range ``[start, end)`` is cut into pieces: a piece held
by a remote segment that may be read directly (COPY_SEGMENT_FINISHED -- every
segment with a manifest is -- and within the leader-epoch lineage, by the
broker's rule ``tiered.lineage.within_leader_epochs``) is read from that
segment by an executor; the rest goes through the brokers as before. Pieces never
overlap: where two kept segments hold the same offsets (a redundant second
upload that expiration has not deleted yet), the one reaching further is used.

The lineage is the epoch history the newest usable upload carries in its
``.leader_epoch_checkpoint`` (the whole history up to that segment's end), and
the log end the rule checks against is the highest offset in remote storage
the partition's leader reports (ListOffsets -5) plus one, or, with no broker to
ask, the newest upload's end plus one. Nothing above the leader's highest tiered
offset is read directly, so an old leader's late upload that the current leader
does not count is never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tierlog.spark.planning import OffsetRange
from tierlog.tiered.lineage import within_leader_epochs
from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata

__all__ = ["RangeCover", "cover_range", "lineage_source", "readable_segments"]


@dataclass(frozen=True)
class RangeCover:
    remote: list[tuple[OffsetRange, RemoteLogSegmentMetadata]]   # read from the segment
    brokers: list[OffsetRange]                                   # read through the brokers


def lineage_source(segments: Sequence[RemoteLogSegmentMetadata],
                   highest_tiered: int | None) -> RemoteLogSegmentMetadata | None:
    """The upload whose epoch checkpoint stands for the current lineage: the one with the newest
    last epoch (then the highest end offset) at or below ``highest_tiered`` (None: no bound)."""
    usable = [s for s in segments if highest_tiered is None or s.end_offset <= highest_tiered]
    if not usable:
        return None
    return max(usable, key=lambda s: (_last_epoch(s), s.end_offset))


def readable_segments(segments: Sequence[RemoteLogSegmentMetadata], epoch_entries: Sequence[tuple[int, int]],
                      log_end_offset: int) -> list[RemoteLogSegmentMetadata]:
    """The finished segments within the lineage, by start offset."""
    kept = [s for s in segments if within_leader_epochs(s, epoch_entries, log_end_offset)]
    return sorted(kept, key=lambda s: (s.start_offset, s.end_offset))


def cover_range(r: OffsetRange, segments: Sequence[RemoteLogSegmentMetadata], highest_tiered: int) -> RangeCover:
    """Cut ``r`` into remote pieces (from ``segments``, none above ``highest_tiered``) and broker pieces."""
    remote, brokers = [], []
    limit = min(r.end, highest_tiered + 1)
    position = r.start
    while position < limit:
        holding = [s for s in segments if s.start_offset <= position <= s.end_offset]
        if holding:
            segment = max(holding, key=lambda s: s.end_offset)
            stop = min(limit, segment.end_offset + 1)
            remote.append((OffsetRange(r.topic, r.partition, position, stop), segment))
        else:
            stop = min([s.start_offset for s in segments if s.start_offset > position] + [limit])
            brokers.append(OffsetRange(r.topic, r.partition, position, stop))
        position = stop
    if position < r.end:
        brokers.append(OffsetRange(r.topic, r.partition, position, r.end))
    return RangeCover(remote, brokers)


def _last_epoch(segment: RemoteLogSegmentMetadata) -> int:
    return segment.segment_leader_epochs[-1][0] if segment.segment_leader_epochs else -1
