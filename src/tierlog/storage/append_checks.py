"""Checks and in-place stamping for appends (Kafka's LogValidator, header level).

Leader appends (from producers) must carry exactly one batch (Kafka's rule for
v2), fit in a segment, have a key in every record when the topic is compacted
(INVALID_RECORD, as Kafka's LogValidator: the whole batch is refused and each keyless
record is named by its index, KIP-467), and have CreateTime timestamps within
[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms].
The timestamps checked are the header's baseTimestamp and maxTimestamp, not each
record's: records are decoded only for a compacted topic's key check. Follower appends must
continue the log with increasing offsets.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from tierlog.records.decoder import decode_records
from tierlog.records.errors import (
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    RECORD_LIST_TOO_LARGE,
    InvalidRecordError,
)
from tierlog.records.header import (
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
)
from tierlog.records.stamp import (
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from tierlog.records.validate import ValidatedRecords
from tierlog.storage.errors import UnexpectedAppendOffsetError
from tierlog.storage.log_config import LogConfig

__all__ = ["check_follower_offsets", "check_produced", "stamp", "writable"]


def check_produced(validated: ValidatedRecords, config: LogConfig, now_ms: int, records=b"",
                   directory: Path | None = None) -> None:
    """Raise ``InvalidRecordError`` unless this is an acceptable producer append
    (``records``: the validated bytes, decoded for compacted topics' key check;
    ``directory``: the log's, whose name is the ``topic-partition`` its messages name)."""
    if len(validated.headers) != 1:
        raise InvalidRecordError(
            INVALID_RECORD, f"a produce request must carry exactly one v2 batch, got {len(validated.headers)}"
        )
    if validated.size > config.segment_bytes:
        raise InvalidRecordError(
            RECORD_LIST_TOO_LARGE, f"{validated.size} bytes exceed segment.bytes {config.segment_bytes}"
        )
    for header in validated.headers:
        _check_timestamps(header, config, now_ms)
    if config.compact_enabled:
        _check_keys(records, validated, "" if directory is None else directory.name)


MAX_ERRORS_SHOWN = 3        # Kafka's LogValidator names at most three record errors in its message


def _check_keys(records, validated: ValidatedRecords, partition: str) -> None:
    """Compacted topics: every record needs a key (Kafka's LogValidator.validateKey; the
    records are decoded, and decompressed, only for these topics).  Every keyless record
    is collected with its index in the batch before the batch is refused
    (LogValidator.processRecordErrors)."""
    view = memoryview(records)
    errors = []
    for position, header in zip(validated.positions, validated.headers, strict=True):
        for index, record in enumerate(decode_records(view[position:position + header.size], header)):
            if record.key is None:
                message = f"Compacted topic cannot accept message without key in topic partition {partition}."
                errors.append((index, message))
    if errors:
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:MAX_ERRORS_SHOWN])
        raise InvalidRecordError(INVALID_RECORD, f"One or more records have been rejected due to {len(errors)} "
                                 f"record errors in total, and only showing the first three errors at most: "
                                 f"[{shown}]", tuple(errors))


def _check_timestamps(header: BatchHeader, config: LogConfig, now_ms: int) -> None:
    if header.attributes & TIMESTAMP_TYPE_BIT:         # LogAppendTime
        raise InvalidRecordError(INVALID_TIMESTAMP, "producers must not set the LogAppendTime timestamp type")
    if config.log_append_time:
        return
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    for timestamp in (header.base_timestamp, header.max_timestamp):
        if timestamp != NO_TIMESTAMP and (now_ms - timestamp > before or timestamp - now_ms > after):
            raise InvalidRecordError(
                INVALID_TIMESTAMP, f"timestamp {timestamp} is out of range [{now_ms - before}, {now_ms + after}]"
            )


def check_follower_offsets(headers: list[BatchHeader], log_end_offset: int) -> None:
    """Replicated batches must start at or after the log end, offsets increasing."""
    first, last = headers[0].base_offset, headers[-1].last_offset
    if first < log_end_offset:
        raise UnexpectedAppendOffsetError(f"first offset {first} is below the log end offset {log_end_offset}",
                                          first, last)
    for previous, header in pairwise(headers):
        if header.base_offset < previous.next_offset:
            raise UnexpectedAppendOffsetError(f"offsets out of order at {header.base_offset}", first, last)


def stamp(records: bytearray, validated: ValidatedRecords, base_offset: int, leader_epoch: int,
           append_time: int) -> list[BatchHeader]:
    """Assign offsets and the epoch in place; returns the headers as now written."""
    stamped = []
    next_offset = base_offset
    for position, header in zip(validated.positions, validated.headers):
        set_base_offset(records, position, next_offset)
        set_partition_leader_epoch(records, position, leader_epoch)
        # baseOffset, batchLength, partitionLeaderEpoch, then the rest as it was (the CRC covers none of these three)
        header = BatchHeader(next_offset, header.batch_length, leader_epoch, *header[3:])
        if append_time != NO_TIMESTAMP:
            set_log_append_time(records, position, append_time)
            header = header._replace(max_timestamp=append_time, attributes=header.attributes | TIMESTAMP_TYPE_BIT)
        stamped.append(header)
        next_offset += header.last_offset_delta + 1
    return stamped


def writable(records):
    """``records`` itself if it can be stamped in place, else a bytearray copy."""
    if isinstance(records, bytearray):
        return records
    with memoryview(records) as view:
        return bytearray(view) if view.readonly else records
