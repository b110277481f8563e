"""One blocking connection to one broker: send a request, read its response.

Used by Spark tasks and the Spark driver, where a plain socket per broker is
the simplest thing that works (no event loop inside Spark's Python workers).
Requests may be pipelined: ``send`` returns the correlation id, ``receive``
reads responses in order (Kafka answers a connection's requests in order).
"""

from __future__ import annotations

import socket
import struct
from collections import deque

from tierlog.protocol import decode_response, encode_request

__all__ = ["BrokerConnection", "ConnectionError_"]

_SIZE = struct.Struct(">i")
RESPONSE_BYTES_MAX = 512 * 1024 * 1024  # a bound on any one response frame


class ConnectionError_(OSError):
    """The broker closed the connection or sent something we cannot read."""


class BrokerConnection:
    """A socket to ``host:port``; ``request()`` for one round trip."""

    def __init__(self, host: str, port: int, *, client_id: str = "tierlog-spark", timeout_s: float = 30.0):
        self.host, self.port = host, port
        self.client_id = client_id
        self._sock = socket.create_connection((host, port), timeout=timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        self._correlation_id = 0
        self._inflight: deque[tuple[int, int, int]] = deque()  # (correlation id, api key, version)

    def send(self, api_key: int, version: int, body: dict) -> int:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        frame = encode_request(api_key, version, self._correlation_id, self.client_id, body)
        try:
            self._sock.sendall(_SIZE.pack(len(frame)) + frame)
        except OSError as e:
            raise ConnectionError_(f"send to {self.host}:{self.port} failed: {e}") from e
        self._inflight.append((self._correlation_id, api_key, version))
        return self._correlation_id

    def receive(self) -> dict:
        """The body of the oldest outstanding request's response."""
        correlation_id, api_key, version = self._inflight.popleft()
        size = _SIZE.unpack(self._read_exactly(4))[0]
        if size < 4 or size > RESPONSE_BYTES_MAX:
            raise ConnectionError_(f"response of {size} bytes from {self.host}:{self.port}")
        got, body = decode_response(api_key, version, self._read_exactly(size))
        if got != correlation_id:
            raise ConnectionError_(f"correlation id {got} from {self.host}:{self.port}, expected {correlation_id}")
        return body

    def request(self, api_key: int, version: int, body: dict) -> dict:
        self.send(api_key, version, body)
        return self.receive()

    def _read_exactly(self, n: int) -> memoryview:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        try:
            while got < n:
                k = self._sock.recv_into(view[got:], n - got)
                if k == 0:
                    raise ConnectionError_(f"{self.host}:{self.port} closed the connection")
                got += k
        except TimeoutError as e:
            raise ConnectionError_(f"no response from {self.host}:{self.port} in time") from e
        return view

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass
