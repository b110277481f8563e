"""Hostile bytes close one connection at most; the node goes on serving everyone else."""
import socket
import struct

import pytest

from tierlog.protocol import decode_response, encode_request

API_VERSIONS, METADATA = 18, 3


def connect(node):
    s = socket.create_connection(("127.0.0.1", node.port), timeout=10)
    return s


def send_frame(s, body: bytes):
    s.sendall(struct.pack(">i", len(body)) + body)


def read_frame(s) -> bytes:
    size = struct.unpack(">i", recv_exact(s, 4))[0]
    return recv_exact(s, size)


def recv_exact(s, n) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def assert_closed(s):
    s.settimeout(10)
    try:
        assert s.recv(1) == b""
    except ConnectionResetError:
        pass


def api_versions_ok(node) -> list:
    with connect(node) as s:
        send_frame(s, encode_request(API_VERSIONS, 3, 7, "probe", {"ClientSoftwareName": "t",
                                                                    "ClientSoftwareVersion": "1"}))
        corr, body = decode_response(API_VERSIONS, 3, read_frame(s))
        assert corr == 7 and body["ErrorCode"] == 0
        return body["ApiKeys"]


@pytest.mark.parametrize("payload", [
    struct.pack(">i", -5),                                   # negative frame size
    struct.pack(">i", 200 * 1024 * 1024),                    # larger than socket.request.max.bytes
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" * 5,    # a TLS hello: garbage to us
    struct.pack(">i", 10) + struct.pack(">hhi", 999, 0, 1) + b"\x00\x00",     # unknown api key
    struct.pack(">i", 10) + struct.pack(">hhi", METADATA, 99, 1) + b"\x00\x00",  # unsupported version
    struct.pack(">i", 10) + struct.pack(">hhi", METADATA, 4, 1) + b"\xff\xff",   # body cut short
], ids=["negative-size", "oversized", "garbage", "unknown-api", "unsupported-version", "truncated-body"])
def test_connection_closed_and_node_still_serves(shared_node, payload):
    other = connect(shared_node)             # an innocent bystander, open across the attack
    with connect(shared_node) as s:
        s.sendall(payload)
        assert_closed(s)
    send_frame(other, encode_request(API_VERSIONS, 0, 1, None, {}))
    assert decode_response(API_VERSIONS, 0, read_frame(other))[1]["ErrorCode"] == 0
    other.close()
    assert api_versions_ok(shared_node)


def test_truncated_frame_then_disconnect(shared_node):
    with connect(shared_node) as s:
        s.sendall(struct.pack(">i", 100) + b"\x00\x12\x00\x03")
    assert api_versions_ok(shared_node)


def test_api_versions_at_unsupported_version_gets_our_list(shared_node):
    with connect(shared_node) as s:
        send_frame(s, struct.pack(">hhi", API_VERSIONS, 77, 42) + b"\x00\x00\x00")
        corr, body = decode_response(API_VERSIONS, 0, read_frame(s))
    assert corr == 42 and body["ErrorCode"] == 35
    keys = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in body["ApiKeys"]}
    assert keys[0] == (3, 12) and keys[1] == (4, 19) and keys[18] == (0, 4)


def test_pipelined_requests_are_answered_in_order(shared_node):
    with connect(shared_node) as s:
        frames = b"".join(struct.pack(">i", len(f)) + f for f in
                          (encode_request(METADATA if i % 2 else API_VERSIONS, 4 if i % 2 else 0, i, "p",
                                          {"Topics": []} if i % 2 else {}) for i in range(50)))
        s.sendall(frames)
        for i in range(50):
            corr, _ = decode_response(METADATA if i % 2 else API_VERSIONS, 4 if i % 2 else 0, read_frame(s))
            assert corr == i
