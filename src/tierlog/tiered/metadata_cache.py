"""One partition's remote log metadata, built from ``__remote_log_metadata`` records (sans-IO).

Semantics follow Kafka's ``RemoteLogMetadataCache``:

- A segment enters with its metadata record in COPY_SEGMENT_STARTED and is then
  moved by update records (transitions in :mod:`tierlog.tiered.segment_metadata`).
  A record that would make an illegal transition, or updates a segment the cache
  never saw, is rejected: ``apply`` returns a non-APPLIED result and changes nothing.
- Only COPY_SEGMENT_FINISHED segments are readable (``segment_for``). For each
  leader epoch inside a finished segment the cache maps the epoch's start offset
  in that segment to the segment; a later finished segment of the same epoch
  starting at or before an earlier one's start replaces it (a new leader's
  upload overlapping an old leader's), and the replaced one stays listed as
  unreferenced so expiration can delete it.
- ``highest_offset_for_epoch`` is the highest offset of that epoch in any
  segment that reached COPY_SEGMENT_FINISHED (it does not go down when segments
  are deleted, as in Kafka).
- DELETE_SEGMENT_STARTED makes a segment unreadable; DELETE_SEGMENT_FINISHED
  forgets it.
"""

from __future__ import annotations

import bisect
from enum import Enum

from tierlog.tiered.metadata_serde import RemoteLogMetadata
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    is_valid_partition_delete_transition,
    is_valid_segment_transition,
)

__all__ = ["ApplyResult", "RemoteLogMetadataCache"]

_S = RemoteLogSegmentState


class ApplyResult(Enum):
    APPLIED = "applied"
    INVALID_TRANSITION = "invalid transition"
    UNKNOWN_SEGMENT = "unknown segment"
    OTHER_PARTITION = "other partition"


class _EpochState:
    """Kafka's RemoteLogLeaderEpochState: epoch start offset -> finished segment."""

    __slots__ = ("highest_offset", "ids", "starts", "unreferenced")

    def __init__(self) -> None:
        self.starts: list[int] = []                       # sorted
        self.ids: dict[int, RemoteLogSegmentId] = {}
        self.unreferenced: set[RemoteLogSegmentId] = set()
        self.highest_offset: int | None = None

    def copy_started(self, sid: RemoteLogSegmentId) -> None:
        self.unreferenced.add(sid)

    def copy_finished(self, start: int, sid: RemoteLogSegmentId, epoch_end: int) -> None:
        while self.starts and self.starts[-1] >= start and (self.highest_offset or -1) <= epoch_end:
            replaced = self.starts.pop()
            self.unreferenced.add(self.ids.pop(replaced))
        if start not in self.ids:
            bisect.insort(self.starts, start)
        self.ids[start] = sid
        self.unreferenced.discard(sid)
        if self.highest_offset is None or epoch_end > self.highest_offset:
            self.highest_offset = epoch_end

    def delete_started(self, start: int, sid: RemoteLogSegmentId) -> None:
        if self.ids.get(start) == sid:
            del self.ids[start]
            self.starts.remove(start)
        self.unreferenced.add(sid)

    def delete_finished(self, sid: RemoteLogSegmentId) -> None:
        self.unreferenced.discard(sid)

    def floor(self, offset: int) -> RemoteLogSegmentId | None:
        index = bisect.bisect_right(self.starts, offset)
        return self.ids[self.starts[index - 1]] if index else None

    def all_ids(self) -> set[RemoteLogSegmentId]:
        return set(self.ids.values()) | self.unreferenced


class RemoteLogMetadataCache:
    """The remote segments of one partition, from its metadata records in order."""

    def __init__(self, topic_id_partition: TopicIdPartition) -> None:
        self.topic_id_partition = topic_id_partition
        self._segments: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata] = {}
        self._epochs: dict[int, _EpochState] = {}
        self.partition_delete_state: RemotePartitionDeleteState | None = None

    # --- applying records -------------------------------------------------------------------

    def apply(self, record: RemoteLogMetadata) -> ApplyResult:
        """Apply one decoded ``__remote_log_metadata`` record of this partition."""
        if isinstance(record, RemotePartitionDeleteMetadata):
            return self._apply_partition_delete(record)
        if record.segment_id.topic_id_partition != self.topic_id_partition:
            return ApplyResult.OTHER_PARTITION
        if isinstance(record, RemoteLogSegmentMetadata):
            return self._add_copy_in_progress(record)
        assert isinstance(record, RemoteLogSegmentMetadataUpdate), type(record)
        return self._apply_update(record)

    def _add_copy_in_progress(self, metadata: RemoteLogSegmentMetadata) -> ApplyResult:
        existing = self._segments.get(metadata.segment_id)
        if metadata.state != _S.COPY_SEGMENT_STARTED or not is_valid_segment_transition(
                existing.state if existing else None, metadata.state):
            return ApplyResult.INVALID_TRANSITION
        for epoch, _start in metadata.segment_leader_epochs:
            self._epochs.setdefault(epoch, _EpochState()).copy_started(metadata.segment_id)
        self._segments[metadata.segment_id] = metadata
        return ApplyResult.APPLIED

    def _apply_update(self, update: RemoteLogSegmentMetadataUpdate) -> ApplyResult:
        existing = self._segments.get(update.segment_id)
        if existing is None:
            return ApplyResult.UNKNOWN_SEGMENT
        if update.state == _S.COPY_SEGMENT_STARTED or not is_valid_segment_transition(
                existing.state, update.state):
            return ApplyResult.INVALID_TRANSITION
        metadata = existing.with_update(update)
        for epoch, start in metadata.segment_leader_epochs:
            state = self._epochs.setdefault(epoch, _EpochState())
            if update.state == _S.COPY_SEGMENT_FINISHED:
                state.copy_finished(start, metadata.segment_id, metadata.epoch_end_offset(epoch))
            elif update.state == _S.DELETE_SEGMENT_STARTED:
                state.delete_started(start, metadata.segment_id)
            else:
                state.delete_finished(metadata.segment_id)
        if update.state == _S.DELETE_SEGMENT_FINISHED:
            del self._segments[metadata.segment_id]
        else:
            self._segments[metadata.segment_id] = metadata
        return ApplyResult.APPLIED

    def _apply_partition_delete(self, record: RemotePartitionDeleteMetadata) -> ApplyResult:
        if record.topic_id_partition != self.topic_id_partition:
            return ApplyResult.OTHER_PARTITION
        if not is_valid_partition_delete_transition(self.partition_delete_state, record.state):
            return ApplyResult.INVALID_TRANSITION
        self.partition_delete_state = record.state
        return ApplyResult.APPLIED

    # --- queries ----------------------------------------------------------------------------

    def segment_for(self, leader_epoch: int, offset: int) -> RemoteLogSegmentMetadata | None:
        """The finished segment holding ``offset`` of ``leader_epoch``, else None."""
        state = self._epochs.get(leader_epoch)
        sid = state.floor(offset) if state else None
        if sid is None:
            return None
        metadata = self._segments[sid]
        return metadata if offset <= metadata.epoch_end_offset(leader_epoch) else None

    def highest_offset_for_epoch(self, leader_epoch: int) -> int | None:
        state = self._epochs.get(leader_epoch)
        return state.highest_offset if state else None

    def segments(self) -> list[RemoteLogSegmentMetadata]:
        """Every segment not DELETE_SEGMENT_FINISHED (any state), by start offset."""
        return sorted(self._segments.values(), key=lambda m: (m.start_offset, m.end_offset))

    def segments_for_epoch(self, leader_epoch: int) -> list[RemoteLogSegmentMetadata]:
        """Every live segment holding ``leader_epoch`` (readable or not), by start offset."""
        state = self._epochs.get(leader_epoch)
        ids = state.all_ids() if state else set()
        return sorted((self._segments[i] for i in ids), key=lambda m: (m.start_offset, m.end_offset))

    def finished_segments(self) -> list[RemoteLogSegmentMetadata]:
        """The readable (COPY_SEGMENT_FINISHED) segments, by start offset."""
        return [m for m in self.segments() if m.state == _S.COPY_SEGMENT_FINISHED]

    def remote_size_bytes(self) -> int:
        """Bytes of the readable segments (what retention.bytes counts as remote)."""
        return sum(m.segment_size_in_bytes for m in self.finished_segments())

    def remote_log_start_offset(self) -> int | None:
        finished = self.finished_segments()
        return finished[0].start_offset if finished else None
