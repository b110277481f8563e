"""Which local segments to upload, and where uploads stopped (sans-IO, Kafka's RLMCopyTask).

Offsets: ``next_offset`` is exclusive; ``highest_remote_offset`` is inclusive
(-1 when nothing is in remote storage).

- ``copy_candidates``: from ``max(highest remote offset + 1, log start)``, every
  segment holding an offset at or past that point (the one containing it
  included) whose next segment's base offset is <= the last stable offset
  (so the segment lies wholly below it), oldest first. The active segment
  never qualifies (it has no next segment).
- ``find_highest_remote_offset``: a new leader walks its leader-epoch entries
  from the latest back; for the first epoch with a highest remote offset ``h``
  in the metadata, the answer is min(h, that epoch's end offset - 1) -- the
  epoch's end offset being the next entry's start, or the log end for the latest.
- ``upload_resume_offset``: before choosing segments, a copy pass raises the
  highest remote offset to the end of the highest COPY_SEGMENT_FINISHED segment
  within the log's epoch lineage (``lineage``). An old leader's upload may
  finish after a new leader found where uploads stopped; uploading those
  offsets again would overlap it. A zombie upload (outside the lineage) never
  counts: its offsets hold another history, this log's own must be uploaded.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from tierlog.tiered.lineage import highest_offset_in_lineage
from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata

__all__ = [
    "NO_REMOTE_OFFSET",
    "LocalSegment",
    "OffsetAndEpoch",
    "copy_candidates",
    "find_highest_remote_offset",
    "upload_resume_offset",
]

NO_REMOTE_OFFSET = -1
_NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class LocalSegment:
    """A local segment as the tiered rules see it."""

    base_offset: int
    next_offset: int            # exclusive: the next segment's base offset, or the log end
    size: int
    max_timestamp_ms: int
    active: bool = False

    def largest_timestamp_or_mtime(self) -> int:
        """For ``storage.retention``'s predicates (a segment without records: its max timestamp field)."""
        return self.max_timestamp_ms


class OffsetAndEpoch(NamedTuple):
    offset: int
    epoch: int


def copy_candidates(segments: Sequence[LocalSegment], *, highest_remote_offset: int,
                    log_start_offset: int, last_stable_offset: int) -> list[LocalSegment]:
    """The segments to upload next, oldest first (``segments`` sorted by base offset)."""
    from_offset = max(highest_remote_offset + 1, log_start_offset)
    chosen = []
    for segment, following in itertools.pairwise(segments):
        if segment.active or following.base_offset <= from_offset:
            continue                     # wholly below where uploads resume
        if following.base_offset > last_stable_offset:
            break
        chosen.append(segment)
    return chosen


def find_highest_remote_offset(epoch_entries: Sequence[tuple[int, int]], log_end_offset: int,
                               highest_offset_for_epoch: Callable[[int], int | None]) -> OffsetAndEpoch:
    """Kafka's findHighestRemoteOffset; (-1, -1) when no epoch of the log has remote data."""
    for index in range(len(epoch_entries) - 1, -1, -1):
        epoch = epoch_entries[index][0]
        highest = highest_offset_for_epoch(epoch)
        if highest is None:
            continue
        end = epoch_entries[index + 1][1] if index + 1 < len(epoch_entries) else log_end_offset
        if end <= highest:
            return OffsetAndEpoch(end - 1, epoch)
        return OffsetAndEpoch(highest, epoch)
    return OffsetAndEpoch(NO_REMOTE_OFFSET, _NO_EPOCH)


def upload_resume_offset(highest_remote_offset: int, finished: Sequence[RemoteLogSegmentMetadata],
                         epoch_entries: Sequence[tuple[int, int]], log_end_offset: int) -> int:
    """max(``highest_remote_offset``, the end of the highest finished segment within the lineage)."""
    return max(highest_remote_offset, highest_offset_in_lineage(finished, epoch_entries, log_end_offset))
