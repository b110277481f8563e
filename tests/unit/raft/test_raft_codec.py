"""The Raft codec's control records: the schema codec gives the bytes the
hand-packed encoder gave (golden bytes), and decodes them back."""

from __future__ import annotations

import struct

import pytest

from tierlog.raft import codec
from tierlog.raft.types import LogBatch


def _i16(v):
    return struct.pack(">h", v)


def _i32(v):
    return struct.pack(">i", v)


def _i64(v):
    return struct.pack(">q", v)


def _ids(*ids):            # compact array of {VoterId int32, empty tags}
    return bytes([len(ids) + 1]) + b"".join(_i32(i) + b"\x00" for i in ids)


@pytest.mark.parametrize(("leader", "voters", "granting", "expected"), [
    (1, [1], [1], _i16(0) + _i32(1) + _ids(1) + _ids(1) + b"\x00"),
    (3, [3, 1, 2], {2, 3}, _i16(0) + _i32(3) + _ids(1, 2, 3) + _ids(2, 3) + b"\x00"),
    (7, [], [], _i16(0) + _i32(7) + _ids() + _ids() + b"\x00"),
    (2**31 - 1, range(200), [5], _i16(0) + _i32(2**31 - 1) + b"\xc9\x01"
     + b"".join(_i32(i) + b"\x00" for i in range(200)) + _ids(5) + b"\x00"),
])
def test_leader_change_value_golden(leader, voters, granting, expected):
    assert codec.leader_change_value(leader, voters, granting) == expected


@pytest.mark.parametrize("ts", [0, 1, -1, 1_700_000_000_123, 2**63 - 1])
def test_snapshot_header_golden_and_parsed(ts):
    value = codec.snapshot_header_value(ts)
    assert value == _i16(0) + _i64(ts) + b"\x00"
    assert codec.parse_snapshot_header(value) == ts


def test_snapshot_footer_golden():
    assert codec.snapshot_footer_value() == _i16(0) + b"\x00"


def test_control_types_survive_a_batch():
    value = codec.snapshot_header_value(5)
    raw = codec.encode_log_batch(LogBatch(0, 1, 5, (value,), True), codec.SNAPSHOT_HEADER)
    [(batch, types)] = codec.decode_with_types(raw)
    assert types == [codec.SNAPSHOT_HEADER] and batch.records == (value,)


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00"])
def test_control_type_of_a_short_key_is_unknown(key):
    assert codec.control_type(key) == -1
