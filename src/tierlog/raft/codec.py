"""LogBatch <-> record batch v2 bytes, and the control records the quorum writes.

Control record keys and values (types 2 LeaderChange, 3 SnapshotHeader, 4
SnapshotFooter) are declared in ``protocol/messages/control_records.py`` and go
through the schema codec; the quorum writes version 0 of each.
"""

from __future__ import annotations

from collections.abc import Iterable

from tierlog.protocol.messages.control_records import (
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    decode_control_key,
    decode_snapshot_header,
    encode_control_key,
    encode_leader_change,
    encode_snapshot_footer,
    encode_snapshot_header,
)
from tierlog.protocol.primitives import ProtocolError
from tierlog.raft.types import LogBatch
from tierlog.records import Record, build_batch, decode_batches

__all__ = [
    "LEADER_CHANGE",
    "SNAPSHOT_FOOTER",
    "SNAPSHOT_HEADER",
    "decode_log_batches",
    "encode_log_batch",
    "encode_log_batches",
    "leader_change_value",
    "parse_snapshot_header",
    "snapshot_footer_value",
    "snapshot_header_value",
]


def control_key(record_type: int) -> bytes:
    return encode_control_key(record_type)


def control_type(key: bytes | None) -> int:
    """The control type of a record key; -1 for a missing or malformed key."""
    if key is None:
        return -1
    try:
        return decode_control_key(key)
    except ProtocolError:
        return -1


def leader_change_value(leader_id: int, voters: Iterable[int], granting: Iterable[int]) -> bytes:
    """A version-0 LeaderChange payload, voters sorted by id."""
    return encode_leader_change(leader_id, sorted(voters), sorted(granting))


def snapshot_header_value(last_contained_ts_ms: int) -> bytes:
    return encode_snapshot_header(last_contained_ts_ms)


def parse_snapshot_header(value: bytes) -> int:
    """LastContainedLogTimestamp of a SnapshotHeader payload; ProtocolError if malformed."""
    timestamp_ms: int = decode_snapshot_header(value)["LastContainedLogTimestamp"]
    return timestamp_ms


def snapshot_footer_value() -> bytes:
    return encode_snapshot_footer()


def encode_log_batch(batch: LogBatch, control_record_type: int | None = None) -> bytes:
    """One v2 batch; a control batch's records get the control key of ``control_record_type``
    (default: the batch's own ``control_type``)."""
    kind = batch.control_type if control_record_type is None else control_record_type
    key = control_key(kind) if batch.control else None
    records = [
        Record(batch.base_offset + i, batch.append_timestamp, key, value)
        for i, value in enumerate(batch.records)
    ]
    return build_batch(records, batch.base_offset, partition_leader_epoch=batch.epoch, control=batch.control)


def encode_log_batches(batches: Iterable[LogBatch]) -> bytes:
    return b"".join(encode_log_batch(b) for b in batches)


def decode_log_batches(buf: bytes | bytearray | memoryview, *, partial_ok: bool = False) -> list[LogBatch]:
    """Decode v2 batches (CRC checked). Control records keep their value only."""
    out = []
    for header, records in decode_batches(buf, partial_ok=partial_ok):
        values = tuple(bytes(r.value or b"") for r in records)
        kind = control_type(records[0].key) if header.is_control and records else LEADER_CHANGE
        out.append(LogBatch(header.base_offset, header.partition_leader_epoch,
                            header.max_timestamp, values, header.is_control, kind))
    return out


def decode_with_types(buf: bytes | bytearray | memoryview) -> list[tuple[LogBatch, list[int]]]:
    """Like decode_log_batches, with each record's control type (-1 for data records)."""
    out = []
    for header, records in decode_batches(buf):
        values = tuple(bytes(r.value or b"") for r in records)
        types = [control_type(r.key) if header.is_control else -1 for r in records]
        kind = types[0] if header.is_control and types else LEADER_CHANGE
        out.append((LogBatch(header.base_offset, header.partition_leader_epoch,
                             header.max_timestamp, values, header.is_control, kind), types))
    return out
