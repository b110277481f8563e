"""Batch compression codecs: none, gzip, snappy, lz4, zstd (attribute bits 0-2).

Everything after ``recordsCount`` is compressed as one stream.

- gzip: RFC 1952 via zlib; several concatenated members are accepted.
- snappy: Java producers (snappy-java) write the xerial framing: the 16-byte header
  ``\\x82SNAPPY\\x00`` + version int32 + compatible version int32, then blocks of
  (int32 compressed length, raw snappy block). librdkafka may write one raw snappy
  block. Both decode; we encode xerial-framed with 32 KiB blocks like snappy-java.
- lz4: the LZ4 frame format; we write what Kafka's ``Lz4BlockOutputStream`` writes:
  64 KiB independent blocks, no content size, no content checksum.
- zstd: one or more zstd frames (the content size may be absent: Java streams).

Decompression is bounded by ``max_size`` so a small batch cannot expand without
limit; overrunning it raises ``InvalidRecordError(CORRUPT_MESSAGE)``.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Callable
from enum import IntEnum
from typing import Any

import cramjam
import lz4.frame
import zstandard

from tierlog.records.errors import (
    CORRUPT_MESSAGE,
    UNSUPPORTED_COMPRESSION_TYPE,
    InvalidRecordError,
)

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "XERIAL_HEADER",
    "CompressionType",
    "DecompressedTooLarge",
    "compress",
    "decompress",
]

DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_MAGIC = XERIAL_HEADER[:8]
_XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = struct.Struct(">i")
_ZSTD_FEED = 1024


class CompressionType(IntEnum):
    """Kafka's codec ids; ``name.lower()`` is the producer config spelling."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def compress(codec: int, data: bytes | bytearray | memoryview, level: int | None = None) -> bytes:
    """Compress ``data`` with ``codec``; ``level`` None means the codec's default."""
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        return gzip.compress(data, compresslevel=6 if level in (None, -1) else level, mtime=0)
    if codec == CompressionType.SNAPPY:
        return _xerial_encode(data)
    if codec == CompressionType.LZ4:
        return _lz4_encode(data, level)
    if codec == CompressionType.ZSTD:
        return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
    raise InvalidRecordError(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec id {codec}")


def decompress(codec: int, data: bytes | bytearray | memoryview,
               max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress a batch payload; corrupt input raises ``InvalidRecordError(CORRUPT_MESSAGE)``."""
    if codec == CompressionType.NONE:
        return bytes(data)
    decoder = _DECODERS.get(codec)
    if decoder is None:
        raise InvalidRecordError(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec id {codec}")
    try:
        out = decoder(data, max_size)
    except InvalidRecordError:
        raise
    except Exception as exc:  # every codec library has its own error types
        name = CompressionType(codec).name.lower()
        raise InvalidRecordError(CORRUPT_MESSAGE, f"cannot decompress {name} payload: {exc}") from exc
    if len(out) > max_size:
        raise DecompressedTooLarge(max_size)
    return out


def _gzip_decode(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    out = bytearray()
    rest = bytes(data)
    while rest:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += inflater.decompress(rest, max_size + 1 - len(out))
        if inflater.unconsumed_tail or not inflater.eof:
            _check_room(out, max_size)
            raise InvalidRecordError(CORRUPT_MESSAGE, "truncated gzip payload")
        rest = inflater.unused_data
    return bytes(out)


def _xerial_encode(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + _XERIAL_BLOCK_SIZE]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decode(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != _XERIAL_MAGIC or len(view) < len(XERIAL_HEADER):
        return _snappy_raw(view, max_size)
    out = bytearray()
    pos = len(XERIAL_HEADER)
    while pos < len(view):
        if pos + 4 > len(view):
            raise InvalidRecordError(CORRUPT_MESSAGE, "truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > len(view):
            raise InvalidRecordError(CORRUPT_MESSAGE, "truncated xerial snappy block")
        out += _snappy_raw(view[pos:pos + length], max_size - len(out))
        pos += length
    return bytes(out)


def _snappy_raw(view: memoryview, max_size: int) -> bytes:
    if cramjam.snappy.decompress_raw_len(view) > max_size:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"decompressed payload exceeds {max_size} bytes")
    return bytes(cramjam.snappy.decompress_raw(view))


def _lz4_encode(data: bytes | bytearray | memoryview, level: int | None) -> bytes:
    frame: bytes = lz4.frame.compress(
        bytes(data),
        compression_level=0 if level is None else level,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    return frame


def _lz4_decode(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    out = bytearray()
    rest = bytes(data)
    while rest:
        decoder = lz4.frame.LZ4FrameDecompressor()
        out += decoder.decompress(rest, max_length=max_size + 1 - len(out))
        _check_room(out, max_size)
        if not decoder.eof:
            raise InvalidRecordError(CORRUPT_MESSAGE, "truncated lz4 frame")
        rest = decoder.unused_data
    return bytes(out)


def _zstd_decode(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    """Frame by frame; input is fed in small steps so output stays near ``max_size``."""
    out = bytearray()
    view = memoryview(bytes(data))
    while len(view):
        decoder = zstandard.ZstdDecompressor().decompressobj()
        pos = 0
        while not decoder.eof and pos < len(view):
            out += decoder.decompress(view[pos:pos + _ZSTD_FEED])
            pos += _ZSTD_FEED
            _check_room(out, max_size)
        if not decoder.eof:
            raise InvalidRecordError(CORRUPT_MESSAGE, "truncated zstd frame")
        view = view[min(pos, len(view)) - len(decoder.unused_data):]
    return bytes(out)


class DecompressedTooLarge(InvalidRecordError):
    """A payload that decompresses past the ``max_size`` asked for (CORRUPT_MESSAGE for batches)."""

    def __init__(self, max_size: int):
        super().__init__(CORRUPT_MESSAGE, f"decompressed payload exceeds {max_size} bytes")


def _check_room(out: bytearray, max_size: int) -> None:
    if len(out) > max_size:
        raise DecompressedTooLarge(max_size)


_DECODERS: dict[int, Callable[[Any, int], bytes]] = {
    CompressionType.GZIP: _gzip_decode,
    CompressionType.SNAPPY: _snappy_decode,
    CompressionType.LZ4: _lz4_decode,
    CompressionType.ZSTD: _zstd_decode,
}
