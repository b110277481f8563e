"""Where a fetch is served from, and ListOffsets' answers for tiered logs (sans-IO).

Fetch at ``offset`` (Kafka's ReplicaManager / UnifiedLog):

- ``offset > log end`` or ``offset < log start``: OFFSET_OUT_OF_RANGE;
- ``local log start <= offset <= log end``: LOCAL;
- ``log start <= offset < local log start`` with remote storage on: a follower
  gets OFFSET_MOVED_TO_TIERED_STORAGE, a consumer is served from REMOTE;
  with it off: OFFSET_OUT_OF_RANGE.

ListOffsets special targets (REFERENCE.md; a leader epoch of -1 means unknown):

- -2 EARLIEST: the log start offset (remote included), with the earliest
  cached epoch if that entry starts at or before it;
- -4 EARLIEST_LOCAL: the local log start offset and its epoch (remote off: as -2);
- -5 LATEST_TIERED: the highest offset in remote storage and its epoch; -1 when
  nothing is uploaded or remote storage is off;
- -6 EARLIEST_PENDING_UPLOAD (KIP-1023, Kafka 4.3): remote off -> -1; nothing
  known uploaded and log start == local log start -> the log start offset;
  nothing known uploaded but they differ -> -1 (not known yet, retry);
  otherwise max(highest uploaded + 1, log start), with its epoch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

__all__ = [
    "EARLIEST",
    "EARLIEST_LOCAL",
    "EARLIEST_PENDING_UPLOAD",
    "LATEST_TIERED",
    "FetchSource",
    "OffsetAnswer",
    "TieredLogState",
    "epoch_for_offset",
    "fetch_source",
    "list_offsets_answer",
]

EARLIEST = -2
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
_UNKNOWN = -1


class FetchSource(Enum):
    LOCAL = "local"
    REMOTE = "remote"
    OFFSET_MOVED_TO_TIERED_STORAGE = "offset moved to tiered storage"
    OFFSET_OUT_OF_RANGE = "offset out of range"


@dataclass(frozen=True, slots=True)
class TieredLogState:
    """What the rules need to know of a partition's log."""

    remote_enabled: bool
    log_start_offset: int
    local_log_start_offset: int
    log_end_offset: int
    highest_remote_offset: int                       # inclusive, -1: nothing uploaded
    epoch_entries: tuple[tuple[int, int], ...] = ()  # (epoch, start offset), increasing


class OffsetAnswer(NamedTuple):
    offset: int
    leader_epoch: int           # -1: unknown


def fetch_source(state: TieredLogState, offset: int, *, from_follower: bool) -> FetchSource:
    """Where a Fetch at ``offset`` is served from."""
    if offset > state.log_end_offset or offset < state.log_start_offset:
        return FetchSource.OFFSET_OUT_OF_RANGE
    if offset >= state.local_log_start_offset:
        return FetchSource.LOCAL
    if not state.remote_enabled:
        return FetchSource.OFFSET_OUT_OF_RANGE
    return FetchSource.OFFSET_MOVED_TO_TIERED_STORAGE if from_follower else FetchSource.REMOTE


def epoch_for_offset(entries: Sequence[tuple[int, int]], offset: int) -> int:
    """Kafka's LeaderEpochFileCache.epochForOffset: the epoch holding ``offset``, -1 if none."""
    found = _UNKNOWN
    for epoch, start in entries:
        if start > offset:
            break
        found = epoch
    return found


def list_offsets_answer(state: TieredLogState, target: int) -> OffsetAnswer:
    """The answer to ListOffsets' special target ``target`` (-2, -4, -5 or -6)."""
    if target == EARLIEST or (target == EARLIEST_LOCAL and not state.remote_enabled):
        return _earliest(state)
    if target == EARLIEST_LOCAL:
        return _at(state, state.local_log_start_offset)
    if target == LATEST_TIERED:
        if not state.remote_enabled or state.highest_remote_offset < 0:
            return OffsetAnswer(_UNKNOWN, _UNKNOWN)
        return _at(state, state.highest_remote_offset)
    if target == EARLIEST_PENDING_UPLOAD:
        return _earliest_pending_upload(state)
    raise ValueError(f"not a tiered ListOffsets target: {target}")


def _earliest(state: TieredLogState) -> OffsetAnswer:
    entries = state.epoch_entries
    epoch = entries[0][0] if entries and entries[0][1] <= state.log_start_offset else _UNKNOWN
    return OffsetAnswer(state.log_start_offset, epoch)


def _at(state: TieredLogState, offset: int) -> OffsetAnswer:
    return OffsetAnswer(offset, epoch_for_offset(state.epoch_entries, offset))


def _earliest_pending_upload(state: TieredLogState) -> OffsetAnswer:
    if not state.remote_enabled:
        return OffsetAnswer(_UNKNOWN, _UNKNOWN)
    if state.highest_remote_offset < 0:
        if state.log_start_offset == state.local_log_start_offset:
            return _at(state, state.log_start_offset)
        return OffsetAnswer(_UNKNOWN, _UNKNOWN)
    return _at(state, max(state.highest_remote_offset + 1, state.log_start_offset))
