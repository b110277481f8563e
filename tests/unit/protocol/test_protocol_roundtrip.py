"""Every API's request and response round-trips at every version, and every
strict prefix of an encoded message is rejected with ProtocolError."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import all_versions, body_values

from tierlog.protocol import (
    APIS,
    ProtocolError,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)


def _encode(key: int, kind: str, version: int, body: dict) -> bytes:
    if kind == "request":
        return encode_request(key, version, 42, "client-1", body)
    return b"".join(encode_response(key, version, 42, body))


def _decode(key: int, kind: str, version: int, frame: bytes) -> dict:
    if kind == "request":
        header, offset = decode_request_header(frame)
        # decoded, not dispatched: no listener, host or principal
        assert header == (key, version, 42, "client-1", None, "", "User:ANONYMOUS")
        return decode_request(key, version, frame, offset)
    correlation_id, body = decode_response(key, version, frame)
    assert correlation_id == 42
    return body


@pytest.mark.parametrize("key,kind,version", all_versions(APIS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_decode_of_encode_is_identity(key, kind, version, data):
    body = data.draw(body_values(APIS[key], kind, version))
    frame = _encode(key, kind, version, body)
    assert _decode(key, kind, version, frame) == body
    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    with pytest.raises(ProtocolError):
        _decode(key, kind, version, frame[:cut])


@pytest.mark.parametrize("key,kind,version", all_versions(APIS))
def test_empty_body_encodes_all_defaults(key, kind, version):
    spec = APIS[key]
    struct = spec.request if kind == "request" else spec.response
    decoded = _decode(key, kind, version, _encode(key, kind, version, {}))
    assert decoded == struct.defaults(version)
