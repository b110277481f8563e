"""The two shells of RequestPipeline against a scripted server on 127.0.0.1:
BlockingConnection (CLI, Spark) and PeerConnection (between nodes)."""

import asyncio
import socket
import threading

import pytest

from tierlog.net.blocking import BlockingConnection
from tierlog.net.client import PeerConnection
from tierlog.net.request_pipeline import SIZE, PeerUnavailable
from tierlog.net.security import SaslCredentials, Security, SecurityProtocol
from tierlog.protocol import ApiKey, decode_request_header, encode_response

ANSWER = {"ErrorCode": 0, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]}


def _response(cid: int) -> bytes:
    frame = b"".join(bytes(p) for p in encode_response(ApiKey.API_VERSIONS, 0, cid, ANSWER))
    return SIZE.pack(len(frame)) + frame


def _read_request(conn: socket.socket) -> int | None:
    """The correlation id of the next request, None once the client is gone."""
    head = conn.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    frame = conn.recv(SIZE.unpack(head)[0], socket.MSG_WAITALL)
    return decode_request_header(frame)[0].correlation_id


class Server:
    """Answers each request with ``reply(correlation id)`` (bytes to send)."""

    def __init__(self, reply):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)
            self._serve_one(conn)

    def _serve_one(self, conn):
        with conn:
            try:
                while (cid := _read_request(conn)) is not None:
                    out = self.reply(cid)
                    if out is None:
                        return
                    conn.sendall(out)
            except OSError:           # the client went away (a test's violation closes it)
                return

    def close(self):
        for sock in [self.sock, *self.accepted]:     # shutdown wakes a thread blocked on it
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.thread.join(5)


@pytest.fixture
def server():
    servers = []

    def make(reply):
        servers.append(Server(reply))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def test_blocking_round_trips_and_pipelines(server):
    s = server(_response)
    conn = BlockingConnection("127.0.0.1", s.port, client_id="t", timeout_s=5)
    assert conn.request(ApiKey.API_VERSIONS, 0, {}) == ANSWER
    first = conn.send(ApiKey.API_VERSIONS, 0, {})
    second = conn.send(ApiKey.API_VERSIONS, 0, {})
    assert second == first + 1
    assert conn.receive() == ANSWER and conn.receive() == ANSWER
    conn.close()


@pytest.mark.parametrize("reply", [
    lambda cid: _response(cid + 1),                  # wrong correlation id
    lambda cid: SIZE.pack(1 << 30) + b"\x00" * 8,    # beyond receive.message.max.bytes
    lambda cid: None,                                # closes the connection
])
def test_blocking_violations_close_the_connection(server, reply):
    s = server(reply)
    conn = BlockingConnection("127.0.0.1", s.port, client_id="t", timeout_s=5)
    with pytest.raises(PeerUnavailable):
        conn.request(ApiKey.API_VERSIONS, 0, {})
    with pytest.raises(PeerUnavailable, match="closed"):
        conn.send(ApiKey.API_VERSIONS, 0, {})


def test_blocking_timeout_is_peer_unavailable(server):
    s = server(lambda cid: b"")             # never answers
    conn = BlockingConnection("127.0.0.1", s.port, client_id="t", timeout_s=5)
    with pytest.raises(PeerUnavailable, match="timed out"):
        conn.request(ApiKey.API_VERSIONS, 0, {}, timeout_s=0.2)


def test_blocking_unreachable_names_the_reason():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(PeerUnavailable) as err:
        BlockingConnection("127.0.0.1", port, client_id="t", timeout_s=5)
    assert err.value.reason and f"127.0.0.1:{port}" in str(err.value)


def test_peer_connection_round_trips_concurrently(server):
    s = server(_response)

    async def main():
        conn = PeerConnection("127.0.0.1", s.port, "t")
        try:
            return await asyncio.gather(*(conn.request(ApiKey.API_VERSIONS, 0, {}, 5) for _ in range(5)))
        finally:
            conn.close()
    assert asyncio.run(main()) == [ANSWER] * 5


def test_peer_connection_fails_all_on_a_wrong_correlation_id(server):
    s = server(lambda cid: _response(cid + 7))

    async def main():
        conn = PeerConnection("127.0.0.1", s.port, "t")
        try:
            with pytest.raises(PeerUnavailable, match="correlation id"):
                await conn.request(ApiKey.API_VERSIONS, 0, {}, 5)
        finally:
            conn.close()
    asyncio.run(main())


def test_peer_connection_drops_a_late_answer_and_serves_the_next(server):
    held = []

    def reply(cid):                           # the first answer comes with the second
        if not held:
            held.append(cid)
            return b""
        return _response(held[0]) + _response(cid)
    s = server(reply)

    async def main():
        conn = PeerConnection("127.0.0.1", s.port, "t")
        try:
            with pytest.raises(PeerUnavailable, match="timed out"):
                await conn.request(ApiKey.API_VERSIONS, 0, {}, 0.2)
            assert await conn.request(ApiKey.API_VERSIONS, 0, {}, 5) == ANSWER
            assert conn.pipeline.abandoned == 0
        finally:
            conn.close()
    asyncio.run(main())


def test_peer_connection_reconnects_after_a_violation(server):
    answers = iter([lambda cid: _response(cid + 1), _response, _response])
    s = server(lambda cid: next(answers)(cid))

    async def main():
        conn = PeerConnection("127.0.0.1", s.port, "t")
        try:
            with pytest.raises(PeerUnavailable):
                await conn.request(ApiKey.API_VERSIONS, 0, {}, 5)
            assert await conn.request(ApiKey.API_VERSIONS, 0, {}, 5) == ANSWER
            await asyncio.sleep(0)                  # the old connection's loss arrives meanwhile
            assert await conn.request(ApiKey.API_VERSIONS, 0, {}, 5) == ANSWER
        finally:
            conn.close()
    asyncio.run(main())


def test_a_login_closed_as_the_loop_shuts_down_is_not_an_unhandled_exception(server):
    """A node stopping cancels its tasks and closes its connections in the same loop turn;
    the login task in flight then ends cancelled or quietly, never with an exception that
    ``asyncio.run`` reports as "unhandled exception during asyncio.run() shutdown"."""
    s = server(lambda cid: b"")                    # takes the SASL handshake, never answers it
    security = Security(SecurityProtocol.SASL_PLAINTEXT, sasl=SaslCredentials("PLAIN", "u", "p"))
    reported = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: reported.append(ctx))
        conn = PeerConnection("127.0.0.1", s.port, "t", security=security)
        caller = asyncio.ensure_future(conn.request(ApiKey.API_VERSIONS, 0, {}, 5))
        while not conn._pending:                   # the handshake request is on the wire
            await asyncio.sleep(0.01)
        login = conn._connecting
        login.cancel()                             # what asyncio.run does to a task left over ...
        caller.cancel()
        conn.close()                               # ... while a shutdown path closes the connection
        await asyncio.gather(login, caller, return_exceptions=True)
        assert login.cancelled() or login.exception() is None
    asyncio.run(main())
    assert reported == []
