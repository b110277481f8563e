"""LogBatch <-> record batch v2 bytes, and the control records the quorum writes.

Control record keys are (version int16 = 0, type int16). Types used here: 2 leader
change, 3 snapshot header, 4 snapshot footer. Their values are flexible version-0
messages: LeaderChange {Version int16, LeaderId int32, Voters [VoterId int32],
GrantingVoters [VoterId int32]}, SnapshotHeader {Version int16,
LastContainedLogTimestamp int64}, SnapshotFooter {Version int16}, each ending with
an empty tagged-field section.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

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
    "parse_leader_change",
    "parse_snapshot_header",
    "snapshot_footer_value",
    "snapshot_header_value",
]

LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4

_KEY = struct.Struct(">hh")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def control_key(record_type: int) -> bytes:
    return _KEY.pack(0, record_type)


def control_type(key: bytes | None) -> int:
    if key is None or len(key) < 4:
        return -1
    return _KEY.unpack_from(key)[1]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _id_array(ids: Iterable[int]) -> bytes:
    ids = list(ids)
    return _uvarint(len(ids) + 1) + b"".join(_I32.pack(i) + b"\x00" for i in ids)


def leader_change_value(leader_id: int, voters: Iterable[int], granting: Iterable[int]) -> bytes:
    return _I16.pack(0) + _I32.pack(leader_id) + _id_array(sorted(voters)) + _id_array(sorted(granting)) + b"\x00"


def parse_leader_change(value: bytes) -> tuple[int, list[int]]:
    """(leader id, voters) of a LeaderChange value."""
    leader = _I32.unpack_from(value, 2)[0]
    n, pos = _read_uvarint(value, 6)
    voters = []
    for _ in range(n - 1):
        voters.append(_I32.unpack_from(value, pos)[0])
        pos += 4
        tags, pos = _read_uvarint(value, pos)
        assert tags == 0
    return leader, voters


def snapshot_header_value(last_contained_ts_ms: int) -> bytes:
    return _I16.pack(0) + _I64.pack(last_contained_ts_ms) + b"\x00"


def parse_snapshot_header(value: bytes) -> int:
    return _I64.unpack_from(value, 2)[0]


def snapshot_footer_value() -> bytes:
    return _I16.pack(0) + b"\x00"


def encode_log_batch(batch: LogBatch, control_record_type: int = LEADER_CHANGE) -> bytes:
    """One v2 batch; a control batch's records get the control key of ``control_record_type``."""
    key = control_key(control_record_type) if batch.control else None
    records = [
        Record(batch.base_offset + i, batch.append_timestamp, key, value)
        for i, value in enumerate(batch.records)
    ]
    return build_batch(records, batch.base_offset, partition_leader_epoch=batch.epoch, control=batch.control)


def encode_log_batches(batches: Iterable[LogBatch]) -> bytes:
    return b"".join(encode_log_batch(b) for b in batches)


def decode_log_batches(buf, *, partial_ok: bool = False) -> list[LogBatch]:
    """Decode v2 batches (CRC checked). Control records keep their value only."""
    out = []
    for header, records in decode_batches(buf, partial_ok=partial_ok):
        values = tuple(bytes(r.value or b"") for r in records)
        out.append(LogBatch(header.base_offset, header.partition_leader_epoch,
                            header.max_timestamp, values, header.is_control))
    return out


def decode_with_types(buf) -> list[tuple[LogBatch, list[int]]]:
    """Like decode_log_batches, with each record's control type (-1 for data records)."""
    out = []
    for header, records in decode_batches(buf):
        values = tuple(bytes(r.value or b"") for r in records)
        types = [control_type(r.key) if header.is_control else -1 for r in records]
        out.append((LogBatch(header.base_offset, header.partition_leader_epoch,
                             header.max_timestamp, values, header.is_control), types))
    return out
