"""Which finished remote segments are redundant copies of offsets others hold (sans-IO).

Two uploads of the same offsets happen: a COPY_SEGMENT_FINISHED record is written
although its publish reported an error (the leader uploads the segment again), or
an old leader's upload finishes after a new leader uploaded those offsets. The
expiration pass deletes the redundant ones so that remote segments never overlap:

- Only offsets at or above the log start offset count: a segment is seen as
  starting at max(its start, log start), and one wholly below it is left to
  retention's walk (an old leader's late upload may straddle the log start).
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
from typing import NamedTuple

from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata

__all__ = ["redundant_segments"]


def redundant_segments(finished: Sequence[RemoteLogSegmentMetadata],
                       log_start_offset: int = 0) -> list[RemoteLogSegmentMetadata]:
    """The segments of ``finished`` (sorted by start offset) whose offsets the kept ones hold."""
    live = [_Span(max(m.start_offset, log_start_offset), m.end_offset, m) for m in finished
            if m.end_offset >= log_start_offset]
    redundant = []
    for run in _overlapping_runs(sorted(live, key=lambda s: s.start_offset)):
        if len(run) == 1:
            continue
        kept = _tiling(run) or _greedy_cover(run)
        ids = {id(s) for s in kept}
        redundant += [s.meta for s in run if id(s) not in ids]
    return redundant


class _Span(NamedTuple):
    """A segment's offsets from the log start on."""

    start_offset: int
    end_offset: int
    meta: RemoteLogSegmentMetadata


def _overlapping_runs(finished: Sequence[_Span]) -> list[list[_Span]]:
    runs: list[list[_Span]] = []
    reach = -1
    for meta in finished:
        if runs and meta.start_offset <= reach:
            runs[-1].append(meta)
            reach = max(reach, meta.end_offset)
        else:
            runs.append([meta])
            reach = meta.end_offset
    return runs


def _tiling(run: list[_Span]) -> list[_Span] | None:
    """The fewest segments covering the run's offsets exactly once, None if there is no such set."""
    by_start: dict[int, list[_Span]] = defaultdict(list)
    for meta in run:
        by_start[meta.start_offset].append(meta)
    best: dict[int, list[_Span]] = {max(m.end_offset for m in run) + 1: []}
    for start in sorted(by_start, reverse=True):
        options = [[m, *best[m.end_offset + 1]] for m in reversed(by_start[start]) if m.end_offset + 1 in best]
        if options:
            best[start] = min(options, key=len)
    return best.get(run[0].start_offset)


def _greedy_cover(run: list[_Span]) -> list[_Span]:
    """The fewest segments covering the run's offsets (each step: the one reaching furthest)."""
    end = max(m.end_offset for m in run)
    kept, position = [], run[0].start_offset
    while position <= end:
        reaching = [m for m in run if m.start_offset <= position]
        chosen = max(reversed(reaching), key=lambda m: m.end_offset)
        kept.append(chosen)
        position = chosen.end_offset + 1
    return kept
