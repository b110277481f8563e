"""The rules of one outbound Kafka connection, without IO (the shells are
``net.client.PeerConnection`` for asyncio and ``net.blocking.BlockingConnection``
for plain sockets).

- Requests go out as ``size int32`` + header + body, each with the next
  correlation id (31 bits, wrapping).
- Kafka answers a connection's requests in the order they were sent, so a
  response must carry the correlation id of the oldest request still owed
  one; any other id is a protocol violation.
- A response frame larger than ``receive_message_max_bytes`` is one too
  (librdkafka's ``receive.message.max.bytes``, default
  ``RECEIVE_MESSAGE_MAX_BYTES``): it bounds what a garbled or hostile size
  prefix can make us buffer.
- A request the caller stopped waiting for stays in line (``abandon``): its
  response is read and dropped when it comes.

Every violation raises ``PeerUnavailable``; the shell then closes the
connection and fails what is in flight.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import NamedTuple

from tierlog.protocol import ProtocolError, decode_response, encode_request

__all__ = ["RECEIVE_MESSAGE_MAX_BYTES", "AuthenticationFailed", "PeerUnavailable", "RequestPipeline"]

#: Largest response frame accepted (librdkafka's ``receive.message.max.bytes``).
#: A tierlog broker's biggest answer is a Fetch: at most ``fetch.max.bytes``
#: (55 MiB by default), or one whole first batch, and a batch came in a request
#: of at most ``socket.request.max.bytes`` (100 MiB). 128 MiB covers both.
RECEIVE_MESSAGE_MAX_BYTES = 128 * 1024 * 1024
SIZE = struct.Struct(">i")
_CORRELATION_ID = struct.Struct(">i")


class PeerUnavailable(Exception):
    """The peer could not be reached, dropped the connection, timed out or
    broke the protocol (the connection is then closed). ``reason`` is the
    cause alone, without the peer's address."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


class AuthenticationFailed(PeerUnavailable):
    """The peer refused the login (SASL mechanism or credentials; Kafka's
    SaslAuthenticationException): retrying with the same settings cannot succeed."""


class _InFlight(NamedTuple):
    correlation_id: int
    api_key: int
    version: int


class RequestPipeline:
    """Correlation ids, the order of answers and the response-size bound of one connection."""

    def __init__(self, client_id: str, receive_message_max_bytes: int = RECEIVE_MESSAGE_MAX_BYTES):
        assert receive_message_max_bytes > 4
        self.client_id = client_id
        self.receive_message_max_bytes = receive_message_max_bytes
        self._in_flight: deque[_InFlight] = deque()
        self._abandoned: set[int] = set()
        self._last_id = 0

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered, abandoned ones included."""
        return len(self._in_flight)

    @property
    def abandoned(self) -> int:
        return len(self._abandoned)

    def request(self, api_key: int, version: int, body: dict) -> tuple[int, bytes]:
        """(correlation id, the size-prefixed frame to send) of a new request."""
        cid = self._last_id = (self._last_id + 1) & 0x7FFFFFFF
        frame = encode_request(api_key, version, cid, self.client_id, body)
        self._in_flight.append(_InFlight(cid, api_key, version))
        return cid, SIZE.pack(len(frame)) + frame

    def frame_size(self, prefix) -> int:
        """The size in a response's 4-byte prefix, checked against the bound."""
        (size,) = SIZE.unpack_from(prefix)
        if not _CORRELATION_ID.size <= size <= self.receive_message_max_bytes:
            raise PeerUnavailable(f"response of {size} bytes (receive.message.max.bytes is "
                                  f"{self.receive_message_max_bytes})")
        if not self._in_flight:
            raise PeerUnavailable("a response to no request")
        return size

    def complete(self, frame) -> tuple[int, dict | None]:
        """(correlation id, body) of the response ``frame`` (without its size
        prefix); the body is None for an abandoned request."""
        if not self._in_flight:
            raise PeerUnavailable("a response to no request")
        expected = self._in_flight.popleft()
        (cid,) = _CORRELATION_ID.unpack_from(frame)
        if cid != expected.correlation_id:
            raise PeerUnavailable(f"response with correlation id {cid}, expected {expected.correlation_id}")
        if cid in self._abandoned:
            self._abandoned.discard(cid)
            return cid, None
        try:
            _, body = decode_response(expected.api_key, expected.version, frame)
        except ProtocolError as e:
            raise PeerUnavailable(f"undecodable response to api {expected.api_key}: {e}") from None
        return cid, body

    def abandon(self, correlation_id: int) -> None:
        """The caller stopped waiting: drop the answer when it comes."""
        if any(r.correlation_id == correlation_id for r in self._in_flight):
            self._abandoned.add(correlation_id)

    def reset(self) -> None:
        """The connection is gone: nothing is owed any more."""
        self._in_flight.clear()
        self._abandoned.clear()
