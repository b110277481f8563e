"""Kafka wire primitives: fixed-width integers, varints, strings, bytes, uuids.

Every decoder has the shape ``decode_x(buf, pos) -> (value, new_pos)`` where
``buf`` is a ``memoryview`` (or ``bytes``) of one frame; every encoder returns
``bytes`` (or appends to a ``bytearray`` for the ``write_*`` helpers used by the
codec). "Classic" encodings use int16/int32 length prefixes with -1 for null;
"compact" encodings (flexible versions) use an unsigned varint of length + 1
with 0 for null.

Truncated or malformed input raises :class:`ProtocolError` here, or a
``struct.error`` / ``IndexError`` that the codec turns into ``ProtocolError``
at its boundary (so the hot path pays for no extra checks).
"""

from __future__ import annotations

import struct

__all__ = [
    "BOOL",
    "EMPTY_TAGGED_FIELDS",
    "FIXED_FORMATS",
    "FIXED_SIZES",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT16",
    "ZERO_UUID",
    "Buffer",
    "ProtocolError",
    "decode_bytes",
    "decode_compact_bytes",
    "decode_compact_nullable_string",
    "decode_compact_string",
    "decode_nullable_string",
    "decode_string",
    "decode_tagged_fields",
    "decode_uuid",
    "decode_uvarint",
    "decode_uvarlong",
    "decode_varint",
    "decode_varlong",
    "encode_bytes",
    "encode_compact_bytes",
    "encode_compact_string",
    "encode_string",
    "encode_tagged_fields",
    "encode_uvarint",
    "encode_varint",
    "encode_varlong",
    "skip_tagged_fields",
    "take",
    "write_uvarint",
    "write_varlong",
]


#: what the decoders read: a frame's bytes, or a zero-copy view of them
Buffer = bytes | bytearray | memoryview


class ProtocolError(Exception):
    """Malformed or truncated input met while decoding a Kafka message."""


INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")
BOOL = struct.Struct(">?")

#: struct format letter of each fixed-width schema type
FIXED_FORMATS = {
    "int8": "b", "int16": "h", "uint16": "H", "int32": "i",
    "int64": "q", "float64": "d", "bool": "?",
}
FIXED_SIZES = {name: struct.calcsize(">" + f) for name, f in FIXED_FORMATS.items()}

ZERO_UUID = bytes(16)
EMPTY_TAGGED_FIELDS = b"\x00"

_UVARINT_MAX_BYTES = 5
_UVARLONG_MAX_BYTES = 10
_ONE_BYTE = [bytes((i,)) for i in range(128)]


# -- varints -----------------------------------------------------------------

def write_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` as an unsigned LEB128 varint: the one varint loop of tierlog."""
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def encode_uvarint(value: int) -> bytes:
    """Unsigned LEB128 varint (Kafka's ``UNSIGNED_VARINT``)."""
    if 0 <= value < 128:
        return _ONE_BYTE[value]
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


def _decode_unsigned(buf: Buffer, pos: int, max_bytes: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    end = pos + max_bytes
    pos += 1
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise ProtocolError(f"varint longer than {max_bytes} bytes")


def decode_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (lengths, counts, tags)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    return _decode_unsigned(buf, pos, _UVARINT_MAX_BYTES)


def decode_uvarlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 10 bytes."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    return _decode_unsigned(buf, pos, _UVARLONG_MAX_BYTES)


def encode_varint(value: int) -> bytes:
    """Zigzag-encoded signed 32-bit varint."""
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"varint out of int32 range: {value}")
    return encode_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def decode_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    raw, pos = decode_uvarint(buf, pos)
    if raw > 0xFFFFFFFF:
        raise ProtocolError("varint exceeds 32 bits")
    return (raw >> 1) ^ -(raw & 1), pos


def _zigzag64(value: int) -> int:
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"varlong out of int64 range: {value}")
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


def encode_varlong(value: int) -> bytes:
    """Zigzag-encoded signed 64-bit varint."""
    return encode_uvarint(_zigzag64(value))


def write_varlong(out: bytearray, value: int) -> None:
    """Append ``value`` as a zigzag varlong (record fields are built this way)."""
    write_uvarint(out, _zigzag64(value))


def decode_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    raw, pos = decode_uvarlong(buf, pos)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise ProtocolError("varlong exceeds 64 bits")
    return (raw >> 1) ^ -(raw & 1), pos


# -- raw slices --------------------------------------------------------------

def take(buf: Buffer, pos: int, n: int) -> tuple[Buffer, int]:
    """The ``n`` bytes at ``pos`` as a zero-copy slice; checks bounds."""
    end = pos + n
    if n < 0 or end > len(buf):
        raise ProtocolError(f"need {n} bytes at {pos}, frame has {len(buf)}")
    return buf[pos:end], end


def decode_uuid(buf: Buffer, pos: int) -> tuple[bytes, int]:
    raw, end = take(buf, pos, 16)
    return bytes(raw), end


# -- strings -----------------------------------------------------------------

def encode_string(value: str | None) -> bytes:
    """Classic string: int16 length (-1 for null) then UTF-8."""
    if value is None:
        return b"\xff\xff"
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ValueError(f"string of {len(data)} bytes exceeds int16 length")
    return INT16.pack(len(data)) + data


def encode_compact_string(value: str | None) -> bytes:
    """Compact string: uvarint length + 1 (0 for null) then UTF-8."""
    if value is None:
        return b"\x00"
    data = value.encode("utf-8")
    return encode_uvarint(len(data) + 1) + data


def _utf8(buf: Buffer, pos: int, n: int) -> tuple[str, int]:
    raw, end = take(buf, pos, n)
    return str(raw, "utf-8"), end


def decode_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    (n,) = INT16.unpack_from(buf, pos)
    if n < 0:
        return None, pos + 2
    return _utf8(buf, pos + 2, n)


def decode_string(buf: Buffer, pos: int) -> tuple[str, int]:
    (n,) = INT16.unpack_from(buf, pos)
    if n < 0:
        raise ProtocolError("null in a non-nullable string")
    return _utf8(buf, pos + 2, n)


def decode_compact_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    n, pos = decode_uvarint(buf, pos)
    if n == 0:
        return None, pos
    return _utf8(buf, pos, n - 1)


def decode_compact_string(buf: Buffer, pos: int) -> tuple[str, int]:
    n, pos = decode_uvarint(buf, pos)
    if n == 0:
        raise ProtocolError("null in a non-nullable compact string")
    return _utf8(buf, pos, n - 1)


# -- bytes -------------------------------------------------------------------

def encode_bytes(value: Buffer | None) -> bytes:
    """Classic bytes: int32 length (-1 for null) then the data."""
    if value is None:
        return b"\xff\xff\xff\xff"
    return INT32.pack(len(value)) + bytes(value)


def encode_compact_bytes(value: Buffer | None) -> bytes:
    """Compact bytes: uvarint length + 1 (0 for null) then the data."""
    if value is None:
        return b"\x00"
    return encode_uvarint(len(value) + 1) + bytes(value)


def decode_bytes(buf: Buffer, pos: int) -> tuple[Buffer | None, int]:
    """Classic bytes as a zero-copy slice, or None for length -1."""
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        return None, pos + 4
    return take(buf, pos + 4, n)


def decode_compact_bytes(buf: Buffer, pos: int) -> tuple[Buffer | None, int]:
    """Compact bytes as a zero-copy slice, or None for length 0."""
    n, pos = decode_uvarint(buf, pos)
    if n == 0:
        return None, pos
    return take(buf, pos, n - 1)


# -- tagged-field sections ---------------------------------------------------

def skip_tagged_fields(buf: Buffer, pos: int) -> int:
    """Skip a whole tagged-field section; returns the offset after it."""
    count, pos = decode_uvarint(buf, pos)
    for _ in range(count):
        _, pos = decode_uvarint(buf, pos)
        size, pos = decode_uvarint(buf, pos)
        _, pos = take(buf, pos, size)
    return pos


def decode_tagged_fields(buf: Buffer, pos: int) -> tuple[dict[int, Buffer], int]:
    """A tagged-field section as ``{tag: raw value slice}``."""
    count, pos = decode_uvarint(buf, pos)
    fields = {}
    for _ in range(count):
        tag, pos = decode_uvarint(buf, pos)
        size, pos = decode_uvarint(buf, pos)
        fields[tag], pos = take(buf, pos, size)
    return fields, pos


def encode_tagged_fields(fields: dict[int, bytes]) -> bytes:
    """A tagged-field section from ``{tag: encoded value}``, in tag order."""
    if not fields:
        return EMPTY_TAGGED_FIELDS
    out = bytearray(encode_uvarint(len(fields)))
    for tag in sorted(fields):
        data = fields[tag]
        out += encode_uvarint(tag)
        out += encode_uvarint(len(data))
        out += data
    return bytes(out)
