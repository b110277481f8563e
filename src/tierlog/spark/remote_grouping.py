"""Remote pieces (``remote_planning.cover_range``: part of a range held by one segment) into input
partitions of about ``remotePartitionBytes`` each: a large piece is split, small neighbours
of the same partition are grouped into one task (one task per 1 MiB segment spends more
time starting than reading).

A piece's size is estimated from its segment's: ``segment_size_in_bytes`` spread evenly over
its offsets. Rules, in order:

- split every piece into the fewest equal offset chunks of at most the target bytes and at
  most ``maxRecordsPerPartition`` offsets;
- with ``minPartitions``, the target is lowered to the remote bytes / ``minPartitions`` first,
  so there are at least that many remote tasks (the broker part is split as before);
- group chunks that follow each other in one partition (each starting where the last ended)
  while the group stays within the target bytes and ``maxRecordsPerPartition`` offsets.

Every offset of every piece is in exactly one task, in offset order within a task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tierlog.spark.planning import OffsetRange, split_range
from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata

__all__ = ["RemotePiece", "group_pieces"]


@dataclass(frozen=True)
class RemotePiece:
    """``range`` read from ``segment``."""

    range: OffsetRange
    segment: RemoteLogSegmentMetadata

    @property
    def bytes(self) -> int:
        offsets = max(1, self.segment.end_offset - self.segment.start_offset + 1)
        return -(-self.segment.segment_size_in_bytes * self.range.size // offsets)


def group_pieces(pieces: Sequence[RemotePiece], target_bytes: int, max_records: int | None,
                 min_partitions: int | None) -> list[list[RemotePiece]]:
    """The tasks (each a list of contiguous pieces of one partition) ``pieces`` are read in."""
    target = _target(pieces, target_bytes, min_partitions)
    chunks = [c for p in pieces for c in _split(p, target, max_records)]
    chunks.sort(key=lambda c: (c.range.topic, c.range.partition, c.range.start))
    tasks: list[list[RemotePiece]] = []
    for chunk in chunks:
        if tasks and _fits(tasks[-1], chunk, target, max_records):
            tasks[-1].append(chunk)
        else:
            tasks.append([chunk])
    return tasks


def _target(pieces: Sequence[RemotePiece], target_bytes: int, min_partitions: int | None) -> int:
    if not min_partitions:
        return target_bytes
    return max(1, min(target_bytes, sum(p.bytes for p in pieces) // min_partitions))


def _split(piece: RemotePiece, target: int, max_records: int | None) -> list[RemotePiece]:
    parts = -(-piece.bytes // target)
    if max_records:
        parts = max(parts, -(-piece.range.size // max_records))
    return [RemotePiece(r, piece.segment) for r in split_range(piece.range, parts)]


def _fits(task: list[RemotePiece], chunk: RemotePiece, target: int, max_records: int | None) -> bool:
    last = task[-1].range
    if (last.topic, last.partition, last.end) != (chunk.range.topic, chunk.range.partition, chunk.range.start):
        return False
    if sum(p.bytes for p in task) + chunk.bytes > target:
        return False
    return not max_records or sum(p.range.size for p in task) + chunk.range.size <= max_records
