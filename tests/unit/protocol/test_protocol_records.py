"""The records type: zero-copy decode, parts and spliced regions on encode."""

import pytest

from tierlog.protocol import (
    ApiKey,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from tierlog.protocol.codec import INLINE_RECORDS_MAX


class Region:
    """Stands in for a file region the transport would sendfile."""

    def __init__(self, data: bytes):
        self.data = data

    def __len__(self) -> int:
        return len(self.data)


def _fetch_body(records) -> dict:
    partition = {"PartitionIndex": 0, "HighWatermark": 10, "Records": records}
    return {"Responses": [{"Topic": "t", "Partitions": [partition]}]}


def _materialize(parts) -> bytes:
    return b"".join(p.data if isinstance(p, Region) else bytes(p) for p in parts)


def _records_of(frame, version=12):
    _, body = decode_response(ApiKey.FETCH, version, frame)
    return body["Responses"][0]["Partitions"][0]["Records"]


def test_produce_records_decode_as_zero_copy_slices():
    blob = bytes(range(200))
    frame = bytearray(encode_request(ApiKey.PRODUCE, 9, 1, "c", {
        "Acks": -1, "TimeoutMs": 1000,
        "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": blob}]}],
    }))
    header, offset = decode_request_header(frame)
    body = decode_request(header.api_key, header.api_version, frame, offset)
    records = body["TopicData"][0]["PartitionData"][0]["Records"]
    assert isinstance(records, memoryview) and records == blob
    frame[-4] ^= 0xFF  # the last records byte, before three empty tag sections
    assert records[-1] == blob[-1] ^ 0xFF


def test_small_parts_are_coalesced_into_one_buffer():
    parts = encode_response(ApiKey.FETCH, 12, 1, _fetch_body([b"ab", bytearray(b"cd"), memoryview(b"ef")]))
    assert len(parts) == 1
    assert _records_of(parts[0]) == b"abcdef"


@pytest.mark.parametrize("version", [11, 12])
def test_opaque_region_is_spliced_between_bytes(version):
    region = Region(b"R" * 50)
    parts = encode_response(ApiKey.FETCH, version, 1, _fetch_body([b"head", region, b"tail"]))
    assert [type(p) for p in parts] == [memoryview, Region, memoryview]
    assert parts[1] is region
    expected = encode_response(ApiKey.FETCH, version, 1, _fetch_body(b"head" + region.data + b"tail"))
    assert _materialize(parts) == _materialize(expected)
    assert _records_of(_materialize(parts), version) == b"head" + region.data + b"tail"


def test_large_bytes_are_spliced_without_copying():
    blob = bytes(INLINE_RECORDS_MAX)
    parts = encode_response(ApiKey.FETCH, 12, 1, _fetch_body(blob))
    assert len(parts) == 3 and parts[1] is blob
    assert _records_of(_materialize(parts)) == blob


def test_null_and_empty_records():
    assert _records_of(_materialize(encode_response(ApiKey.FETCH, 12, 1, _fetch_body(None)))) is None
    assert _records_of(_materialize(encode_response(ApiKey.FETCH, 4, 1, _fetch_body([]))), 4) == b""


def test_wide_memoryviews_count_bytes_not_items():
    wide = memoryview(bytes(8)).cast("I")
    assert _records_of(_materialize(encode_response(ApiKey.FETCH, 12, 1, _fetch_body(wide)))) == bytes(8)


def test_requests_cannot_carry_opaque_regions():
    body = {"Acks": 1, "TimeoutMs": 1, "TopicData": [
        {"Name": "t", "PartitionData": [{"Index": 0, "Records": [Region(b"x")]}]}]}
    with pytest.raises(TypeError):
        encode_request(ApiKey.PRODUCE, 9, 1, "c", body)


def test_large_request_records_are_joined_into_bytes():
    blob = b"z" * INLINE_RECORDS_MAX
    frame = encode_request(ApiKey.PRODUCE, 8, 1, "c", {
        "Acks": 1, "TimeoutMs": 1,
        "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": blob}]}]})
    assert isinstance(frame, bytes)
    _header, offset = decode_request_header(frame)
    assert decode_request(0, 8, frame, offset)["TopicData"][0]["PartitionData"][0]["Records"] == blob
