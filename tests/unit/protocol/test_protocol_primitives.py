"""Wire primitives: varints, strings, bytes, tagged-field sections."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tierlog.protocol.primitives import (
    ProtocolError,
    decode_bytes,
    decode_compact_bytes,
    decode_compact_nullable_string,
    decode_compact_string,
    decode_nullable_string,
    decode_string,
    decode_tagged_fields,
    decode_uvarint,
    decode_uvarlong,
    decode_varint,
    decode_varlong,
    encode_bytes,
    encode_compact_bytes,
    encode_compact_string,
    encode_string,
    encode_tagged_fields,
    encode_uvarint,
    encode_varint,
    encode_varlong,
    skip_tagged_fields,
)


@pytest.mark.parametrize("value,hex_", [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"),
    (16383, "ff7f"), (16384, "808001"), (0xFFFFFFFF, "ffffffff0f"),
])
def test_uvarint_known_encodings(value, hex_):
    assert encode_uvarint(value).hex() == hex_
    assert decode_uvarint(bytes.fromhex(hex_), 0) == (value, len(hex_) // 2)


@pytest.mark.parametrize("value,hex_", [
    (0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"),
    (64, "8001"), (2147483647, "feffffff0f"), (-2147483648, "ffffffff0f"),
])
def test_varint_zigzag_known_encodings(value, hex_):
    assert encode_varint(value).hex() == hex_
    assert decode_varint(bytes.fromhex(hex_), 0) == (value, len(hex_) // 2)


@given(st.integers(0, (1 << 35) - 1))
def test_uvarint_roundtrip(value):
    data = encode_uvarint(value)
    assert decode_uvarint(data + b"\x99", 0) == (value, len(data))


@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_varint_roundtrip(value):
    data = encode_varint(value)
    assert decode_varint(data, 0) == (value, len(data))


@given(st.integers(-(1 << 63), (1 << 63) - 1))
def test_varlong_roundtrip(value):
    data = encode_varlong(value)
    assert len(data) <= 10
    assert decode_varlong(data, 0) == (value, len(data))


def test_overlong_varints_are_rejected():
    with pytest.raises(ProtocolError):
        decode_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(ProtocolError):
        decode_uvarlong(b"\x80" * 10 + b"\x01", 0)
    with pytest.raises(ProtocolError):
        decode_varint(b"\xff\xff\xff\xff\x1f", 0)  # 35 bits


def test_truncated_varint_raises_index_error_for_the_codec_to_wrap():
    with pytest.raises(IndexError):
        decode_uvarint(b"\x80\x80", 0)


@pytest.mark.parametrize("encode,value", [
    (encode_uvarint, -1), (encode_varint, 1 << 31), (encode_varlong, -(1 << 63) - 1),
])
def test_out_of_range_values_are_refused(encode, value):
    with pytest.raises(ValueError):
        encode(value)


@given(st.text(max_size=40))
def test_strings_roundtrip_classic_and_compact(text):
    classic = encode_string(text)
    assert decode_string(classic, 0) == (text, len(classic))
    assert decode_nullable_string(classic, 0) == (text, len(classic))
    compact = encode_compact_string(text)
    assert decode_compact_string(compact, 0) == (text, len(compact))
    assert decode_compact_nullable_string(compact, 0) == (text, len(compact))


def test_null_strings():
    assert encode_string(None) == b"\xff\xff"
    assert encode_compact_string(None) == b"\x00"
    assert decode_nullable_string(b"\xff\xff", 0) == (None, 2)
    assert decode_compact_nullable_string(b"\x00", 0) == (None, 1)
    with pytest.raises(ProtocolError):
        decode_string(b"\xff\xff", 0)
    with pytest.raises(ProtocolError):
        decode_compact_string(b"\x00", 0)


def test_string_longer_than_its_frame_is_rejected():
    with pytest.raises(ProtocolError):
        decode_string(b"\x00\x05abc", 0)
    with pytest.raises(ProtocolError):
        decode_compact_string(b"\x06abc", 0)


def test_invalid_utf8_raises_a_value_error_for_the_codec_to_wrap():
    with pytest.raises(UnicodeDecodeError):
        decode_string(b"\x00\x01\xff", 0)


@given(st.binary(max_size=40))
def test_bytes_roundtrip_as_zero_copy_slices(data):
    frame = memoryview(encode_bytes(data) + encode_compact_bytes(data))
    first, pos = decode_bytes(frame, 0)
    second, end = decode_compact_bytes(frame, pos)
    assert isinstance(first, memoryview) and first.obj is frame.obj
    assert (bytes(first), bytes(second), end) == (data, data, len(frame))


def test_null_bytes():
    assert decode_bytes(encode_bytes(None), 0) == (None, 4)
    assert decode_compact_bytes(encode_compact_bytes(None), 0) == (None, 1)
    with pytest.raises(ProtocolError):
        decode_bytes(b"\x00\x00\x00\x09abc", 0)


@given(st.dictionaries(st.integers(0, 1000), st.binary(max_size=5), max_size=4))
def test_tagged_field_sections_roundtrip_and_skip(fields):
    data = encode_tagged_fields(fields) + b"tail"
    decoded, pos = decode_tagged_fields(data, 0)
    assert {tag: bytes(v) for tag, v in decoded.items()} == fields
    assert skip_tagged_fields(data, 0) == pos == len(data) - 4


def test_tagged_fields_are_written_in_tag_order():
    assert encode_tagged_fields({5: b"b", 1: b"a"}) == bytes([2, 1, 1]) + b"a" + bytes([5, 1]) + b"b"
