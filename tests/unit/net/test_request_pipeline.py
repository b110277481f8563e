"""RequestPipeline: framing, correlation ids in order, the response-size bound."""

import struct

import pytest

from tierlog.net.request_pipeline import (
    RECEIVE_MESSAGE_MAX_BYTES,
    SIZE,
    PeerUnavailable,
    RequestPipeline,
)
from tierlog.protocol import (
    ApiKey,
    decode_request,
    decode_request_header,
    encode_response,
)


def _answer(cid, api_key=ApiKey.API_VERSIONS, version=0, body=None):
    body = body if body is not None else {"ErrorCode": 0, "ApiKeys": []}
    return b"".join(bytes(p) for p in encode_response(api_key, version, cid, body))


def test_requests_are_framed_with_increasing_correlation_ids():
    p = RequestPipeline("me")
    cids = []
    for _ in range(3):
        cid, frame = p.request(ApiKey.API_VERSIONS, 0, {})
        (size,) = SIZE.unpack_from(frame)
        assert size == len(frame) - 4
        header, pos = decode_request_header(frame[4:])
        assert (header.api_key, header.correlation_id, header.client_id) == (ApiKey.API_VERSIONS, cid, "me")
        assert decode_request(ApiKey.API_VERSIONS, 0, frame[4:], pos) == {}
        cids.append(cid)
    assert cids == sorted(cids) and len(set(cids)) == 3 and p.in_flight == 3


def test_correlation_ids_wrap_at_31_bits():
    p = RequestPipeline("me")
    p._last_id = 0x7FFFFFFF
    cid, _ = p.request(ApiKey.API_VERSIONS, 0, {})
    assert cid == 0


def test_responses_complete_requests_in_order():
    p = RequestPipeline("me")
    first, _ = p.request(ApiKey.API_VERSIONS, 0, {})
    second, _ = p.request(ApiKey.API_VERSIONS, 0, {})
    assert p.complete(_answer(first)) == (first, {"ErrorCode": 0, "ApiKeys": []})
    assert p.complete(_answer(second))[0] == second
    assert p.in_flight == 0


def test_an_out_of_order_correlation_id_is_a_violation():
    p = RequestPipeline("me")
    p.request(ApiKey.API_VERSIONS, 0, {})
    second, _ = p.request(ApiKey.API_VERSIONS, 0, {})
    with pytest.raises(PeerUnavailable, match="correlation id"):
        p.complete(_answer(second))


def test_a_response_to_no_request_is_a_violation():
    p = RequestPipeline("me")
    with pytest.raises(PeerUnavailable):
        p.frame_size(SIZE.pack(8))
    with pytest.raises(PeerUnavailable):
        p.complete(_answer(1))


@pytest.mark.parametrize("size", [-1, 0, 3, RECEIVE_MESSAGE_MAX_BYTES + 1])
def test_sizes_outside_the_bound_are_violations(size):
    p = RequestPipeline("me")
    p.request(ApiKey.API_VERSIONS, 0, {})
    with pytest.raises(PeerUnavailable, match="receive.message.max.bytes"):
        p.frame_size(SIZE.pack(size))


def test_the_bound_is_per_connection():
    p = RequestPipeline("me", receive_message_max_bytes=100)
    p.request(ApiKey.API_VERSIONS, 0, {})
    assert p.frame_size(SIZE.pack(100)) == 100
    with pytest.raises(PeerUnavailable):
        p.frame_size(SIZE.pack(101))


def test_an_abandoned_request_answer_is_dropped_and_the_next_still_matches():
    p = RequestPipeline("me")
    first, _ = p.request(ApiKey.API_VERSIONS, 0, {})
    second, _ = p.request(ApiKey.API_VERSIONS, 0, {})
    p.abandon(first)
    assert p.abandoned == 1
    assert p.complete(_answer(first)) == (first, None)
    assert p.complete(_answer(second))[1] is not None
    assert p.abandoned == 0


def test_an_undecodable_answer_is_a_violation():
    p = RequestPipeline("me")
    cid, _ = p.request(ApiKey.API_VERSIONS, 0, {})
    with pytest.raises(PeerUnavailable, match="undecodable"):
        p.complete(struct.pack(">i", cid) + b"\x00")


def test_reset_forgets_what_was_owed():
    p = RequestPipeline("me")
    cid, _ = p.request(ApiKey.API_VERSIONS, 0, {})
    p.abandon(cid)
    p.reset()
    assert (p.in_flight, p.abandoned) == (0, 0)
