"""The leader epochs an upload carries (sans-IO), as Kafka's copy task computes them.

- ``epoch_entries_in_range(entries, start, end)``: Kafka's
  ``LeaderEpochFileCache.epochEntriesInRange`` on a copy of the entries --
  with ``start >= 0``, entries starting at or before ``start`` are dropped and
  the last of them comes back starting at ``start``; entries starting at or
  after ``end`` (exclusive) are dropped.
- ``segment_leader_epochs``: the epochs inside one segment [base, next base),
  for its ``RemoteLogSegmentMetadata``.
- ``leader_epoch_checkpoint``: the uploaded ``.leader_epoch_checkpoint``, the
  whole history up to the next segment's base offset in Kafka's checkpoint text
  format (version 0, count, ``<epoch> <start offset>`` lines), so a follower
  can rebuild its epoch cache from the one remote segment ending before a
  leader's local log start. ``parse_leader_epoch_checkpoint`` reads it back.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "EpochCheckpointError",
    "epoch_entries_in_range",
    "leader_epoch_checkpoint",
    "parse_leader_epoch_checkpoint",
    "segment_leader_epochs",
]

_VERSION = "0"


class EpochCheckpointError(ValueError):
    """An uploaded leader-epoch checkpoint that cannot be read."""


def epoch_entries_in_range(entries: Sequence[tuple[int, int]], start_offset: int,
                           end_offset: int) -> list[tuple[int, int]]:
    """Kafka's epochEntriesInRange(start (inclusive, -1: from the first), end (exclusive))."""
    result = list(entries)
    if start_offset >= 0:
        before = [e for e in result if e[1] <= start_offset]
        result = [e for e in result if e[1] > start_offset]
        if before:
            result.insert(0, (before[-1][0], start_offset))
    if end_offset >= 0:
        result = [e for e in result if e[1] < end_offset]
    return result


def segment_leader_epochs(entries: Sequence[tuple[int, int]], base_offset: int,
                          next_base_offset: int) -> tuple[tuple[int, int], ...]:
    """The (epoch, start offset) entries inside the segment [base_offset, next_base_offset)."""
    return tuple(epoch_entries_in_range(entries, base_offset, next_base_offset))


def leader_epoch_checkpoint(entries: Sequence[tuple[int, int]], next_base_offset: int) -> bytes:
    """The ``.leader_epoch_checkpoint`` object of an upload ending before ``next_base_offset``."""
    kept = epoch_entries_in_range(entries, -1, next_base_offset)
    lines = [_VERSION, str(len(kept)), *(f"{epoch} {offset}" for epoch, offset in kept)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def parse_leader_epoch_checkpoint(data: bytes) -> list[tuple[int, int]]:
    """The entries of an uploaded checkpoint; EpochCheckpointError when malformed."""
    try:
        lines = data.decode("utf-8").splitlines()
        if len(lines) < 2 or lines[0].strip() != _VERSION:
            raise EpochCheckpointError("unrecognised leader-epoch checkpoint version line")
        count = int(lines[1])
        entries = [tuple(int(x) for x in line.split()) for line in lines[2:] if line.strip()]
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, EpochCheckpointError):
            raise
        raise EpochCheckpointError(f"malformed leader-epoch checkpoint: {exc}") from None
    if count != len(entries) or any(len(e) != 2 for e in entries):
        raise EpochCheckpointError(f"leader-epoch checkpoint: expected {count} entries of two numbers")
    return [(e[0], e[1]) for e in entries]
