"""Varints and compression codecs: round trips, framing facts, corrupt input, bounds."""

import gzip
import struct

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from tierlog.protocol.primitives import encode_varlong, write_varlong
from tierlog.records import (
    CORRUPT_MESSAGE,
    UNSUPPORTED_COMPRESSION_TYPE,
    CompressionType,
    InvalidRecordError,
)
from tierlog.records.compression import XERIAL_HEADER, compress, decompress
from tierlog.records.record import read_varint

CODECS = list(CompressionType)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trip(value):
    out = bytearray(b"\xff")
    write_varlong(out, value)
    assert bytes(out[1:]) == encode_varlong(value)
    assert read_varint(out, 1) == (value, len(out))


@pytest.mark.parametrize("value, encoded", [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"),
                                            (-64, b"\x7f"), (64, b"\x80\x01"), (300, b"\xd8\x04")])
def test_varint_zigzag_encoding_matches_protobuf(value, encoded):
    out = bytearray()
    write_varlong(out, value)
    assert bytes(out) == encoded


def test_varint_truncated_and_overlong_are_corrupt():
    with pytest.raises(InvalidRecordError) as err:
        read_varint(b"\x80\x80", 0)
    assert err.value.error_code == CORRUPT_MESSAGE
    with pytest.raises(InvalidRecordError):
        read_varint(b"\xff" * 11, 0)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(CODECS), st.binary(max_size=70_000))
def test_codec_round_trip(codec, data):
    assert decompress(codec, compress(codec, data)) == data


def test_snappy_is_xerial_framed_with_32k_blocks():
    data = bytes(range(256)) * 300  # 76800 bytes -> 3 blocks
    encoded = compress(CompressionType.SNAPPY, data)
    assert encoded.startswith(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    pos, blocks = len(XERIAL_HEADER), []
    while pos < len(encoded):
        (length,) = struct.unpack_from(">i", encoded, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(encoded[pos + 4:pos + 4 + length])))
        pos += 4 + length
    assert [len(b) for b in blocks] == [32768, 32768, 11264]
    assert b"".join(blocks) == data


def test_raw_snappy_as_librdkafka_writes_decodes():
    data = b"librdkafka raw snappy " * 100
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_lz4_frame_uses_independent_64k_blocks_without_checksums():
    encoded = compress(CompressionType.LZ4, b"x" * 1000)
    assert encoded[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flags, block_descriptor = encoded[4], encoded[5]
    assert flags & 0x20  # block independence
    assert not flags & 0x04 and not flags & 0x08  # no content checksum, no content size
    assert block_descriptor >> 4 == 4  # 64 KiB max block size


def test_foreign_encoders_decode():
    data = b"from other encoders " * 500
    assert decompress(CompressionType.GZIP, gzip.compress(data) + gzip.compress(data)) == data * 2
    assert decompress(CompressionType.LZ4, lz4.frame.compress(data, block_linked=True, content_checksum=True)) == data
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert decompress(CompressionType.ZSTD, streamed + zstandard.ZstdCompressor().compress(data)) == data * 2


def test_kafka_python_codecs_agree():
    data = b"cross-check with kafka-python " * 400
    assert kafka_codec.gzip_decode(compress(CompressionType.GZIP, data)) == data
    assert kafka_codec.lz4_decode(compress(CompressionType.LZ4, data)) == data
    assert kafka_codec.zstd_decode(compress(CompressionType.ZSTD, data)) == data
    assert decompress(CompressionType.GZIP, kafka_codec.gzip_encode(data)) == data
    assert decompress(CompressionType.LZ4, kafka_codec.lz4_encode(data)) == data
    assert decompress(CompressionType.ZSTD, kafka_codec.zstd_encode(data)) == data


@pytest.mark.parametrize("codec", CODECS[1:])
def test_truncated_payload_is_corrupt(codec):
    encoded = compress(codec, bytes(range(256)) * 100)
    with pytest.raises(InvalidRecordError) as err:
        decompress(codec, encoded[: len(encoded) // 2])
    assert err.value.error_code == CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", CODECS[1:])
def test_decompression_is_bounded(codec):
    encoded = compress(codec, b"\x00" * 1_000_000)
    with pytest.raises(InvalidRecordError) as err:
        decompress(codec, encoded, max_size=100_000)
    assert err.value.error_code == CORRUPT_MESSAGE


def test_unknown_codec():
    with pytest.raises(InvalidRecordError) as err:
        decompress(5, b"x")
    assert err.value.error_code == UNSUPPORTED_COMPRESSION_TYPE
