"""Which finished remote segments are redundant copies of offsets others hold (sans-IO).

Two uploads of the same offsets happen: a COPY_SEGMENT_FINISHED record is written
although its publish reported an error (the leader uploads the segment again), or
an old leader's upload finishes after a new leader uploaded those offsets. The
expiration pass deletes the redundant ones so that remote segments never overlap:

- Finished segments are grouped into runs that overlap (adjacent segments do not).
- In a run spanning [a, b], the segments kept are a tiling of [a, b] -- segments
  that cover it exactly once -- with as few segments as possible; among equals,
  later-listed segments win (of two uploads of the same offsets, the later stays).
- A run with no tiling (two uploads that each hold offsets of their own) keeps
  the fewest segments covering [a, b] (the greedy interval cover); they overlap
  until retention removes them, but no offset loses its copy.

Every offset a finished segment holds is still held by a kept one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata

__all__ = ["redundant_segments"]


def redundant_segments(finished: Sequence[RemoteLogSegmentMetadata]) -> list[RemoteLogSegmentMetadata]:
    """The segments of ``finished`` (sorted by start offset) whose offsets the kept ones hold."""
    redundant = []
    for run in _overlapping_runs(finished):
        if len(run) == 1:
            continue
        kept = _tiling(run) or _greedy_cover(run)
        ids = {m.segment_id for m in kept}
        redundant += [m for m in run if m.segment_id not in ids]
    return redundant


def _overlapping_runs(finished: Sequence[RemoteLogSegmentMetadata]) -> list[list[RemoteLogSegmentMetadata]]:
    runs: list[list[RemoteLogSegmentMetadata]] = []
    reach = -1
    for meta in finished:
        if runs and meta.start_offset <= reach:
            runs[-1].append(meta)
            reach = max(reach, meta.end_offset)
        else:
            runs.append([meta])
            reach = meta.end_offset
    return runs


def _tiling(run: list[RemoteLogSegmentMetadata]) -> list[RemoteLogSegmentMetadata] | None:
    """The fewest segments covering the run's offsets exactly once, None if there is no such set."""
    by_start: dict[int, list[RemoteLogSegmentMetadata]] = defaultdict(list)
    for meta in run:
        by_start[meta.start_offset].append(meta)
    best: dict[int, list[RemoteLogSegmentMetadata]] = {max(m.end_offset for m in run) + 1: []}
    for start in sorted(by_start, reverse=True):
        options = [[m, *best[m.end_offset + 1]] for m in reversed(by_start[start]) if m.end_offset + 1 in best]
        if options:
            best[start] = min(options, key=len)
    return best.get(run[0].start_offset)


def _greedy_cover(run: list[RemoteLogSegmentMetadata]) -> list[RemoteLogSegmentMetadata]:
    """The fewest segments covering the run's offsets (each step: the one reaching furthest)."""
    end = max(m.end_offset for m in run)
    kept, position = [], run[0].start_offset
    while position <= end:
        reaching = [m for m in run if m.start_offset <= position]
        chosen = max(reversed(reaching), key=lambda m: m.end_offset)
        kept.append(chosen)
        position = chosen.end_offset + 1
    return kept
