"""Remote log metadata as Kafka's RemoteLogMetadataManager API has it.

Segment states (Kafka's ``RemoteLogSegmentState`` ids), legal transitions::

    (none)                 -> COPY_SEGMENT_STARTED
    COPY_SEGMENT_STARTED   -> COPY_SEGMENT_FINISHED | DELETE_SEGMENT_STARTED
    COPY_SEGMENT_FINISHED  -> DELETE_SEGMENT_STARTED
    DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED
    any state              -> the same state (a retry or a new leader repeating it)

Partition delete states (``RemotePartitionDeleteState``)::

    (none) -> DELETE_PARTITION_MARKED -> DELETE_PARTITION_STARTED -> DELETE_PARTITION_FINISHED
    any state -> the same state

Offsets are inclusive (``end_offset`` is the segment's last offset).
``segment_leader_epochs`` lists (epoch, start offset) of the epochs inside the
segment, both increasing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum

__all__ = [
    "RemoteLogSegmentId",
    "RemoteLogSegmentMetadata",
    "RemoteLogSegmentMetadataUpdate",
    "RemoteLogSegmentState",
    "RemotePartitionDeleteMetadata",
    "RemotePartitionDeleteState",
    "TopicIdPartition",
    "is_valid_partition_delete_transition",
    "is_valid_segment_transition",
]


class RemoteLogSegmentState(IntEnum):
    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


class RemotePartitionDeleteState(IntEnum):
    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


_S = RemoteLogSegmentState
_SEGMENT_NEXT = {
    None: {_S.COPY_SEGMENT_STARTED},
    _S.COPY_SEGMENT_STARTED: {_S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED},
    _S.COPY_SEGMENT_FINISHED: {_S.DELETE_SEGMENT_STARTED},
    _S.DELETE_SEGMENT_STARTED: {_S.DELETE_SEGMENT_FINISHED},
    _S.DELETE_SEGMENT_FINISHED: set(),
}
_P = RemotePartitionDeleteState
_PARTITION_NEXT = {
    None: {_P.DELETE_PARTITION_MARKED},
    _P.DELETE_PARTITION_MARKED: {_P.DELETE_PARTITION_STARTED},
    _P.DELETE_PARTITION_STARTED: {_P.DELETE_PARTITION_FINISHED},
    _P.DELETE_PARTITION_FINISHED: set(),
}


def is_valid_segment_transition(src: RemoteLogSegmentState | None,
                                target: RemoteLogSegmentState) -> bool:
    """Kafka's ``RemoteLogSegmentState.isValidTransition``."""
    return src == target or target in _SEGMENT_NEXT[src]


def is_valid_partition_delete_transition(src: RemotePartitionDeleteState | None,
                                         target: RemotePartitionDeleteState) -> bool:
    """Kafka's ``RemotePartitionDeleteState.isValidTransition``."""
    return src == target or target in _PARTITION_NEXT[src]


@dataclass(frozen=True, slots=True)
class TopicIdPartition:
    topic_id: bytes          # 16 bytes
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentId:
    topic_id_partition: TopicIdPartition
    id: bytes                # 16 bytes, a random uuid per upload attempt


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadataUpdate:
    segment_id: RemoteLogSegmentId
    event_timestamp_ms: int
    state: RemoteLogSegmentState
    broker_id: int
    custom_metadata: bytes | None = None


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadata:
    segment_id: RemoteLogSegmentId
    start_offset: int                                   # inclusive
    end_offset: int                                     # inclusive
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]  # (epoch, start offset), increasing
    segment_size_in_bytes: int
    state: RemoteLogSegmentState = RemoteLogSegmentState.COPY_SEGMENT_STARTED
    custom_metadata: bytes | None = None

    def __post_init__(self) -> None:
        """Reject inconsistent metadata (it may come from a topic written by anyone)."""
        epochs = [e for e, _ in self.segment_leader_epochs]
        starts = [o for _, o in self.segment_leader_epochs]
        if not (0 <= self.start_offset <= self.end_offset and epochs
                and epochs == sorted(set(epochs)) and starts == sorted(set(starts))
                and self.start_offset <= starts[0] and starts[-1] <= self.end_offset):
            raise ValueError(f"inconsistent remote segment metadata: offsets "
                             f"[{self.start_offset}, {self.end_offset}], epochs {self.segment_leader_epochs}")

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return self.segment_id.topic_id_partition

    def epoch_end_offset(self, epoch: int) -> int:
        """Last offset of ``epoch`` inside this segment (inclusive); the epoch must be in it."""
        for index, (e, _) in enumerate(self.segment_leader_epochs):
            if e == epoch:
                following = self.segment_leader_epochs[index + 1:]
                return following[0][1] - 1 if following else self.end_offset
        raise KeyError(epoch)

    def with_state(self, state: RemoteLogSegmentState) -> RemoteLogSegmentMetadata:
        return replace(self, state=state)

    def with_update(self, update: RemoteLogSegmentMetadataUpdate) -> RemoteLogSegmentMetadata:
        """Kafka's ``createWithUpdates``: the update's state, time, broker and custom metadata."""
        assert update.segment_id == self.segment_id
        return replace(self, state=update.state, event_timestamp_ms=update.event_timestamp_ms,
                       broker_id=update.broker_id, custom_metadata=update.custom_metadata)


@dataclass(frozen=True, slots=True)
class RemotePartitionDeleteMetadata:
    topic_id_partition: TopicIdPartition
    state: RemotePartitionDeleteState
    event_timestamp_ms: int
    broker_id: int
