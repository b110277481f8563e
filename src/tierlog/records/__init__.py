"""Record batch v2: validate and stamp in place (hot path), build and decode (tools).

Hot path (the broker): ``validate`` walks batch headers and checks CRC-32C in C;
``set_base_offset`` / ``set_partition_leader_epoch`` stamp in place without touching
the CRC; ``set_log_append_time`` applies LogAppendTime and recomputes it.

Tools path: ``build_batch`` and ``decode_batches`` with all five codecs.
"""

from tierlog.records.builder import build_batch
from tierlog.records.compression import CompressionType, compress, decompress
from tierlog.records.decoder import decode_batches, decode_records, iter_batches
from tierlog.records.errors import (
    CORRUPT_MESSAGE,
    INCONSISTENT_TOPIC_ID,
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    KAFKA_STORAGE_ERROR,
    MESSAGE_TOO_LARGE,
    OFFSET_OUT_OF_RANGE,
    RECORD_LIST_TOO_LARGE,
    UNSUPPORTED_COMPRESSION_TYPE,
    UNSUPPORTED_FOR_MESSAGE_FORMAT,
    InvalidRecordError,
)
from tierlog.records.header import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    BatchHeader,
    TimestampType,
    parse_header,
)
from tierlog.records.record import Record
from tierlog.records.stamp import (
    compute_crc,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from tierlog.records.validate import ValidatedRecords, validate, validate_batch

__all__ = [
    "CORRUPT_MESSAGE",
    "HEADER_SIZE",
    "INCONSISTENT_TOPIC_ID",
    "INVALID_RECORD",
    "INVALID_TIMESTAMP",
    "KAFKA_STORAGE_ERROR",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "MESSAGE_TOO_LARGE",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_TIMESTAMP",
    "OFFSET_OUT_OF_RANGE",
    "RECORD_LIST_TOO_LARGE",
    "UNSUPPORTED_COMPRESSION_TYPE",
    "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    "BatchHeader",
    "CompressionType",
    "InvalidRecordError",
    "Record",
    "TimestampType",
    "ValidatedRecords",
    "build_batch",
    "compress",
    "compute_crc",
    "decode_batches",
    "decode_records",
    "decompress",
    "iter_batches",
    "parse_header",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "validate",
    "validate_batch",
]
