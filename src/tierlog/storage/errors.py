"""Storage exceptions; each carries Kafka's ``error_code`` where one exists."""

from __future__ import annotations

from tierlog.records.errors import (
    INCONSISTENT_TOPIC_ID,
    KAFKA_STORAGE_ERROR,
    OFFSET_OUT_OF_RANGE,
    InvalidRecordError,
)

__all__ = [
    "CorruptCheckpointError",
    "CorruptIndexError",
    "InconsistentTopicIdError",
    "InvalidRecordError",
    "KafkaStorageError",
    "OffsetOutOfRangeError",
    "UnexpectedAppendOffsetError",
]


class OffsetOutOfRangeError(Exception):
    """The offset is outside [local log start, log end] (OFFSET_OUT_OF_RANGE)."""

    error_code = OFFSET_OUT_OF_RANGE

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"offset {offset} is out of range [{log_start_offset}, {log_end_offset}]"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class KafkaStorageError(Exception):
    """Disk I/O failed; the log is offline from now on (KAFKA_STORAGE_ERROR)."""

    error_code = KAFKA_STORAGE_ERROR


class InconsistentTopicIdError(Exception):
    """partition.metadata holds another topic id than the one given (INCONSISTENT_TOPIC_ID)."""

    error_code = INCONSISTENT_TOPIC_ID


class UnexpectedAppendOffsetError(Exception):
    """A follower append does not continue the log (Kafka's UnexpectedAppendOffsetException).

    Raised when the first offset is below the log end or the batches' offsets are
    not increasing; the replica fetcher truncates and retries.
    """

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class CorruptIndexError(Exception):
    """An index file failed its sanity check; the segment rebuilds it from the log."""


class CorruptCheckpointError(ValueError):
    """A checkpoint file is malformed."""
