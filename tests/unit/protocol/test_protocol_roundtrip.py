"""Every API's request and response round-trips at every version."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tierlog.protocol import (
    APIS, ProtocolError, decode_request, decode_request_header, decode_response,
    encode_request, encode_response,
)
from protocol_strategies import all_versions, body_values

_SETTINGS = settings(max_examples=12, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _roundtrip(key: int, kind: str, version: int, body: dict) -> tuple[bytes, dict]:
    if kind == "request":
        frame = encode_request(key, version, 42, "client-1", body)
        header, offset = decode_request_header(frame)
        assert header == (key, version, 42, "client-1")
        return frame, decode_request(key, version, frame, offset)
    frame = b"".join(encode_response(key, version, 42, body))
    correlation_id, decoded = decode_response(key, version, frame)
    assert correlation_id == 42
    return frame, decoded


@pytest.mark.parametrize("key,kind,version", all_versions(APIS))
@_SETTINGS
@given(data=st.data())
def test_decode_of_encode_is_identity(key, kind, version, data):
    body = data.draw(body_values(APIS[key], kind, version))
    _, decoded = _roundtrip(key, kind, version, body)
    assert decoded == body


@pytest.mark.parametrize("key,kind,version", all_versions(APIS))
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_every_strict_prefix_raises_protocol_error(key, kind, version, data):
    body = data.draw(body_values(APIS[key], kind, version))
    frame, _ = _roundtrip(key, kind, version, body)
    cut = data.draw(st.integers(0, len(frame) - 1))
    with pytest.raises(ProtocolError):
        if kind == "request":
            header, offset = decode_request_header(frame[:cut])
            decode_request(key, version, frame[:cut], offset)
        else:
            decode_response(key, version, frame[:cut])


@pytest.mark.parametrize("key,kind,version", all_versions(APIS))
def test_empty_body_encodes_all_defaults(key, kind, version):
    spec = APIS[key]
    struct = spec.request if kind == "request" else spec.response
    _, decoded = _roundtrip(key, kind, version, {})
    assert decoded == struct.defaults(version)
