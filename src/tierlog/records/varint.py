"""Zigzag varints (protobuf style), as used inside v2 records.

Tools path only: the broker's hot path never decodes records.
"""

from __future__ import annotations

from tierlog.records.errors import CORRUPT_MESSAGE, InvalidRecordError

__all__ = ["read_varint", "varint_size", "write_varint"]

_MAX_VARLONG_BYTES = 10


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (signed, up to 64 bits) zigzag-encoded to ``out``."""
    n = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def varint_size(value: int) -> int:
    """Bytes ``write_varint`` would use for ``value``."""
    n = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Decode the zigzag varint at ``pos``; returns (value, position after it)."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(_MAX_VARLONG_BYTES):
        if pos >= end:
            raise InvalidRecordError(CORRUPT_MESSAGE, "truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise InvalidRecordError(CORRUPT_MESSAGE, "varint longer than 10 bytes")
