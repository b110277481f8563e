"""Request and response headers."""

import pytest

from tierlog.protocol import (
    APIS,
    ApiKey,
    ProtocolError,
    RequestHeader,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from tierlog.protocol.header import decode_response_header, encode_request_header

_METADATA_V1 = {"Topics": None}


def test_request_header_v1_bytes():
    frame = encode_request(ApiKey.METADATA, 1, 7, "c", _METADATA_V1)
    assert frame.hex() == "0003" "0001" "00000007" "0001" "63" "ffffffff"


def test_request_header_v2_keeps_int16_client_id_and_adds_tags():
    frame = encode_request(ApiKey.METADATA, 9, 7, "ab", {"Topics": None})
    assert frame[:13].hex() == "0003" "0009" "00000007" "0002" "6162" "00"


def test_null_client_id():
    frame = encode_request(ApiKey.API_VERSIONS, 0, 1, None, {})
    assert frame.hex() == "0012" "0000" "00000001" "ffff"
    assert decode_request_header(frame) == (RequestHeader(18, 0, 1, None), 10)


@pytest.mark.parametrize("version,offset", [(2, 11), (3, 12)])
def test_decode_request_header_returns_body_offset(version, offset):
    frame = encode_request(ApiKey.API_VERSIONS, version, 9, "x", {})
    header, pos = decode_request_header(memoryview(frame))
    assert header == RequestHeader(ApiKey.API_VERSIONS, version, 9, "x")
    assert pos == offset


def test_header_tagged_fields_are_skipped():
    frame = bytearray(encode_request(ApiKey.API_VERSIONS, 3, 9, "x", {}))
    body = frame[12:]
    tagged = bytes([1, 4, 2]) + b"zz"  # one unknown tag (4) of 2 bytes
    header, pos = decode_request_header(bytes(frame[:11]) + tagged + body)
    assert header.correlation_id == 9 and pos == 11 + len(tagged)


@pytest.mark.parametrize("api_key,api_version", [(999, 0), (ApiKey.API_VERSIONS, 77), (ApiKey.PRODUCE, -1)])
def test_unknown_key_or_version_still_yields_the_v1_part(api_key, api_version):
    frame = encode_request_header(api_key, api_version, 5, "cli", 2) + b"body"
    header, pos = decode_request_header(frame)
    assert header == RequestHeader(api_key, api_version, 5, "cli")
    assert pos == 8 + 2 + 3  # past the client id; the v2 tag byte is not consumed


def test_truncated_request_header_raises_protocol_error():
    frame = encode_request_header(ApiKey.FETCH, 12, 5, "client", 2)
    for cut in range(len(frame)):
        with pytest.raises(ProtocolError):
            decode_request_header(frame[:cut])


def test_response_header_v0_for_non_flexible_and_v1_for_flexible():
    body = {"Responses": [], "ThrottleTimeMs": 0}
    (v8,) = encode_response(ApiKey.PRODUCE, 8, 3, body)
    (v9,) = encode_response(ApiKey.PRODUCE, 9, 3, body)
    assert bytes(v8) == bytes.fromhex("00000003" "00000000" "00000000")
    assert bytes(v9) == bytes.fromhex("00000003" "00" "01" "00000000" "00")


def test_api_versions_response_always_uses_header_v0():
    spec = APIS[ApiKey.API_VERSIONS]
    assert [spec.response_header_version(v) for v in range(5)] == [0] * 5
    (frame,) = encode_response(ApiKey.API_VERSIONS, 3, 8, {"ErrorCode": 35})
    assert bytes(frame[:6]) == bytes.fromhex("00000008" "0023")
    assert decode_response(ApiKey.API_VERSIONS, 3, frame)[1]["ErrorCode"] == 35


def test_header_versions_follow_flexibility():
    produce = APIS[ApiKey.PRODUCE]
    assert (produce.request_header_version(8), produce.request_header_version(9)) == (1, 2)
    assert (produce.response_header_version(8), produce.response_header_version(9)) == (0, 1)


def test_truncated_response_header_raises_protocol_error():
    with pytest.raises(ProtocolError):
        decode_response_header(b"\x00\x00\x01", 0)
    with pytest.raises(ProtocolError):
        decode_response_header(b"\x00\x00\x00\x01", 1)
