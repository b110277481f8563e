"""Kafka error codes raised by record validation, and the exception carrying them.

The codes are Kafka's (``org.apache.kafka.common.protocol.Errors``) as plain ints,
so this layer does not depend on ``tierlog.protocol``.
"""

from __future__ import annotations

__all__ = [
    "CORRUPT_MESSAGE",
    "INCONSISTENT_TOPIC_ID",
    "INVALID_RECORD",
    "INVALID_TIMESTAMP",
    "KAFKA_STORAGE_ERROR",
    "MESSAGE_TOO_LARGE",
    "OFFSET_OUT_OF_RANGE",
    "RECORD_LIST_TOO_LARGE",
    "UNSUPPORTED_COMPRESSION_TYPE",
    "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    "InvalidRecordError",
]

OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
RECORD_LIST_TOO_LARGE = 18
INVALID_TIMESTAMP = 32
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
KAFKA_STORAGE_ERROR = 56
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87
INCONSISTENT_TOPIC_ID = 103


class InvalidRecordError(Exception):
    """A record batch failed validation; ``error_code`` is the Kafka error to answer with."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    def __repr__(self) -> str:
        return f"InvalidRecordError({self.error_code}, {self.message!r})"
