"""Connections that declare huge frames, linger, or come in numbers cannot exhaust a node.

Before the bounds a 4-byte size prefix made the node allocate the whole declared frame (20
connections sending a size and 70 KB took a broker to 2.1 GB), no connection was ever closed for
idling or for a stalled frame, and connections were not limited per IP.
"""
import socket
import struct

import pytest
from clients import consume_all, create_topic, produce_all
from cluster import wait_for
from nodeproc import NodeProcess

HOSTILE_IP = "127.0.0.2"        # loopback, a second source address: the normal clients stay on 127.0.0.1
DECLARED = 100 * 1024 * 1024    # socket.request.max.bytes: the largest frame a peer may declare


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def hostile(port: int, payload: bytes = b"") -> socket.socket:
    s = socket.socket()
    s.bind((HOSTILE_IP, 0))
    s.settimeout(15)
    s.connect(("127.0.0.1", port))
    if payload:
        s.sendall(payload)
    return s


def closed_by_peer(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def round_trip(node, topic: str) -> None:
    create_topic(node.bootstrap, topic)
    produce_all(node.bootstrap, topic, [(0, b"k", b"v%d" % i, None, None) for i in range(100)])
    assert len(consume_all(node.bootstrap, topic, 1, 100)) == 100


@pytest.fixture
def bounded_node(tmp_path):
    n = NodeProcess(tmp_path / "node-1", props={"connections.max.idle.ms": "2000",
                                                 "socket.request.read.timeout.ms": "2000",
                                                 "max.connections.per.ip.overrides": f"{HOSTILE_IP}:40"}).start()
    yield n
    n.stop()


def test_declared_sizes_cost_only_the_bytes_sent(bounded_node):
    before = rss_bytes(bounded_node.proc.pid)
    conns = [hostile(bounded_node.port, struct.pack(">i", DECLARED) + b"\x00" * 4096) for _ in range(10)]
    round_trip(bounded_node, "normal-during-attack")
    assert rss_bytes(bounded_node.proc.pid) - before < 200 * 1024 * 1024     # 10 x 100 MiB before the fix
    for s in conns:
        s.close()


def test_stalled_frames_and_idle_connections_are_closed(bounded_node):
    stalled = hostile(bounded_node.port, struct.pack(">i", 1000) + b"\x00" * 10)
    idle = hostile(bounded_node.port)
    for s in (stalled, idle):
        assert closed_by_peer(s)        # within the 15 s socket timeout; the deadlines are 2 s
        s.close()
    assert "socket.request.read.timeout.ms passed" in bounded_node.log_path.read_text()
    assert "connections.max.idle.ms passed" in bounded_node.log_path.read_text()


def test_connections_past_the_per_ip_limit_are_refused_and_others_served(bounded_node):
    conns = [hostile(bounded_node.port) for _ in range(40)]
    extra = hostile(bounded_node.port)
    assert closed_by_peer(extra)
    round_trip(bounded_node, "normal-beside-the-crowd")     # 127.0.0.1 has its own count
    conns.pop().close()
    wait_for(lambda: _served(bounded_node.port), what="a slot from the closed connection")
    for s in conns:
        s.close()


def _served(port: int) -> bool:
    """An ApiVersions v0 answered on a fresh connection from the hostile address."""
    s = hostile(port, struct.pack(">ihhih", 10, 18, 0, 7, -1))
    try:
        head = s.recv(8)
        return len(head) == 8 and struct.unpack(">ii", head)[1] == 7
    except OSError:
        return False
    finally:
        s.close()
