"""Connection creation rates over sockets (KIP-612): an IP over its client quota
(``connection_creation_rate``, set with the CLI) has its new connections closed, and may
connect again once its rate is back under; a listener over
``listener.name.<l>.max.connection.creation.rate`` holds new connections (answered late,
never closed). Rates are measured over 2 windows of 1 s (quota.window.num=2)."""
import socket
import struct

import pytest
from cluster import wait_for
from nodeproc import NodeProcess
from test_cli import ok

from tierlog.protocol import decode_response, encode_request

pytestmark = pytest.mark.integration

API_VERSIONS = 18
CONNECTIONS = 12


def _open(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    frame = encode_request(API_VERSIONS, 0, 1, "rate-test", {})
    s.sendall(struct.pack(">i", len(frame)) + frame)
    return s


def _answered(s: socket.socket, timeout_s: float = 15) -> bool:
    """Whether the broker answers ApiVersions on ``s`` (False: it closed the connection)."""
    s.settimeout(timeout_s)
    try:
        head = s.recv(4)
        if len(head) < 4:
            return False
        size = struct.unpack(">i", head)[0]
        body = b""
        while len(body) < size:
            chunk = s.recv(size - len(body))
            if not chunk:
                return False
            body += chunk
        _, answer = decode_response(API_VERSIONS, 0, body)
        return answer["ErrorCode"] == 0
    except ConnectionResetError:
        return False
    finally:
        s.close()


def test_an_ip_over_its_connection_creation_rate_is_closed_until_it_slows_down(tmp_path):
    node = NodeProcess(tmp_path / "node-1", props={"quota.window.num": "2"}).start()
    try:
        ok("configs", "--entity-type", "ips", "--entity-name", "127.0.0.1", "--alter",
           "--add-config", "connection_creation_rate=2", "--bootstrap-server", node.bootstrap)
        sockets = [_open(node.port) for _ in range(CONNECTIONS)]
        answers = [_answered(s) for s in sockets]
        assert answers[0] and answers.count(False) >= CONNECTIONS // 2, answers
        # once the rate is back under 2/s, a connection is served again
        wait_for(lambda: _answered(_open(node.port)), 30, "a connection served after slowing down", interval_s=2)
    finally:
        node.stop()


def test_a_listener_over_its_rate_holds_new_connections_but_closes_none(tmp_path):
    node = NodeProcess(tmp_path / "node-1", props={"quota.window.num": "2",
                                                   "listener.name.plaintext.max.connection.creation.rate": "2"}).start()
    try:
        sockets = [_open(node.port) for _ in range(CONNECTIONS)]
        last = sockets[-1]
        last.settimeout(0.3)
        with pytest.raises(TimeoutError):       # held: nothing read from it yet (throttled for up to 2 s)
            last.recv(1)
        assert all(_answered(s) for s in sockets)
    finally:
        node.stop()
