"""Kafka error codes raised by record validation, and the exception carrying them.

The short names are the ``ErrorCode`` members (``tierlog.protocol``, the layer
below) that record validation and storage answer with; the numbers live only there.
"""

from __future__ import annotations

from tierlog.protocol.errors import ErrorCode

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

OFFSET_OUT_OF_RANGE = ErrorCode.OFFSET_OUT_OF_RANGE
CORRUPT_MESSAGE = ErrorCode.CORRUPT_MESSAGE
MESSAGE_TOO_LARGE = ErrorCode.MESSAGE_TOO_LARGE
RECORD_LIST_TOO_LARGE = ErrorCode.RECORD_LIST_TOO_LARGE
INVALID_TIMESTAMP = ErrorCode.INVALID_TIMESTAMP
UNSUPPORTED_FOR_MESSAGE_FORMAT = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
KAFKA_STORAGE_ERROR = ErrorCode.KAFKA_STORAGE_ERROR
UNSUPPORTED_COMPRESSION_TYPE = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
INVALID_RECORD = ErrorCode.INVALID_RECORD
INCONSISTENT_TOPIC_ID = ErrorCode.INCONSISTENT_TOPIC_ID


class InvalidRecordError(Exception):
    """A record batch failed validation; ``error_code`` is the Kafka error to answer with.

    ``record_errors``: (batch index, message) of each record that failed on its own
    (KIP-467: Produce v8+ answers them as RecordErrors, so a client fails exactly those
    records with the error and the rest of the batch as collateral).
    """

    def __init__(self, error_code: int, message: str,
                 record_errors: tuple[tuple[int, str], ...] = ()) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        self.record_errors = record_errors

    def __repr__(self) -> str:
        return f"InvalidRecordError({self.error_code}, {self.message!r})"
