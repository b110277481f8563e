"""One v2 record: encode and decode (tools path; the broker keeps batches as bytes).

Record layout::

    length varint (bytes after it), attributes int8 (unused, 0),
    timestampDelta varlong, offsetDelta varint,
    keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
    headerCount varint, then per header: keyLength varint, key (UTF-8),
    valueLength varint (-1 = null), value
"""

from __future__ import annotations

from typing import NamedTuple

from tierlog.protocol.primitives import ProtocolError, decode_varlong, write_varlong
from tierlog.records.errors import CORRUPT_MESSAGE, InvalidRecordError

__all__ = ["Record", "decode_record", "encode_record", "read_varint"]


class Record(NamedTuple):
    """A record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = ()  # type: ignore[assignment]


def encode_record(out: bytearray, record: Record, offset_delta: int, timestamp_delta: int) -> None:
    """Append ``record`` (length-prefixed) to ``out``."""
    body = bytearray(b"\x00")  # attributes
    write_varlong(body, timestamp_delta)
    write_varlong(body, offset_delta)
    _write_bytes(body, record.key)
    _write_bytes(body, record.value)
    write_varlong(body, len(record.headers))
    for name, value in record.headers:
        _write_bytes(body, name.encode("utf-8"))
        _write_bytes(body, value)
    write_varlong(out, len(body))
    out += body


def decode_record(buf: bytes | bytearray | memoryview, pos: int, base_offset: int,
                  base_timestamp: int) -> tuple[Record, int, int]:
    """Decode the record at ``pos``; returns (record, offset delta, position after it)."""
    length, pos = read_varint(buf, pos)
    end = pos + length
    if length < 1 or end > len(buf):
        raise InvalidRecordError(CORRUPT_MESSAGE, f"record length {length} runs past the batch")
    pos += 1  # attributes
    timestamp_delta, pos = read_varint(buf, pos)
    offset_delta, pos = read_varint(buf, pos)
    key, pos = _read_bytes(buf, pos, end)
    value, pos = _read_bytes(buf, pos, end)
    headers, pos = _read_headers(buf, pos, end)
    if pos != end:
        raise InvalidRecordError(CORRUPT_MESSAGE, "record length does not match its fields")
    record = Record(base_offset + offset_delta, base_timestamp + timestamp_delta, key, value, headers)
    return record, offset_delta, end


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A record field's zigzag varint (protocol's varlong decoder, up to 64 bits) at
    ``pos``: (value, position after it); a truncated or overlong one is CORRUPT_MESSAGE."""
    try:
        return decode_varlong(buf, pos)
    except (ProtocolError, IndexError) as e:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"malformed varint at {pos}: {e or 'truncated'}") from None


def _read_headers(buf: bytes | bytearray | memoryview, pos: int,
                  end: int) -> tuple[list[tuple[str, bytes | None]], int]:
    count, pos = read_varint(buf, pos)
    if count < 0 or count > end - pos:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"invalid header count {count}")
    headers = []
    for _ in range(count):
        name, pos = _read_bytes(buf, pos, end)
        if name is None:
            raise InvalidRecordError(CORRUPT_MESSAGE, "null header key")
        value, pos = _read_bytes(buf, pos, end)
        headers.append((name.decode("utf-8", errors="replace"), value))
    return headers, pos


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        write_varlong(out, -1)
        return
    write_varlong(out, len(data))
    out += data


def _read_bytes(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length == -1:
        return None, pos
    if length < -1 or pos + length > end:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"invalid field length {length}")
    return bytes(buf[pos:pos + length]), pos + length
