"""A blocking Kafka connection to one broker, the plain-socket shell of
``net.request_pipeline`` (for the CLI and Spark tasks, which have no event loop).

``send`` returns the correlation id and ``receive`` reads the oldest
outstanding request's answer, so requests may be pipelined; ``request`` is
one round trip. Each call has a timeout (the connection's ``timeout_s`` unless
given) that covers the whole call. Any failure, a timeout, a closed socket or
a protocol violation raises ``PeerUnavailable`` and closes the connection:
a half-read answer leaves nothing usable. The socket comes from
``net.connect.connect`` with the connection's ``Security`` (plaintext by default);
with SASL credentials the connection authenticates (``net.sasl_client``) before it
is handed out, and again before a request once the broker's session lifetime is nearly
over (KIP-368; only when no answer is outstanding, so nothing is behind the exchange). ``sent``, when given, counts the
requests sent by (address, api key): the client's own instrumentation.
"""

from __future__ import annotations

import socket
from collections import Counter

from tierlog.clock import monotonic_s
from tierlog.net import sasl_client
from tierlog.net.connect import connect, describe_failure
from tierlog.net.request_pipeline import (
    RECEIVE_MESSAGE_MAX_BYTES,
    SIZE,
    PeerUnavailable,
    RequestPipeline,
)
from tierlog.net.security import PLAINTEXT, SaslCredentials, Security

__all__ = ["BlockingConnection"]


class BlockingConnection:
    """A socket to ``host:port`` with Kafka framing and correlation ids."""

    def __init__(self, host: str, port: int, *, client_id: str, timeout_s: float,
                 receive_message_max_bytes: int = RECEIVE_MESSAGE_MAX_BYTES, sent: Counter | None = None,
                 security: Security = PLAINTEXT):
        self.host, self.port = host, port
        self.timeout_s = timeout_s
        self.sent = sent
        self.pipeline = RequestPipeline(client_id, receive_message_max_bytes)
        self._security = security
        self._reauth_at: float | None = None        # monotonic_s() to log in again (KIP-368)
        try:
            self._sock: socket.socket | None = connect(host, port, security, timeout_s)
        except OSError as e:
            reason = _reason(e)
            raise PeerUnavailable(f"cannot connect to {self.address}: {reason}", reason) from None
        if security.sasl is not None:
            self._authenticate(security.sasl)

    def _authenticate(self, creds: SaslCredentials) -> None:
        """SASL before anything else (``net.sasl_client``); a refusal closes the connection."""
        self._reauth_at = None
        try:
            sasl_client.check_handshake(self.request(*sasl_client.handshake_request(creds)), creds)
            login = sasl_client.ClientExchange(creds)
            token: bytes | None = login.first()
            while token is not None:
                token = login.next(self.request(*sasl_client.authenticate_request(token)))
        except PeerUnavailable as e:
            self.close()
            raise type(e)(f"cannot connect to {self.address}: {e.reason}", e.reason) from None
        after_s = sasl_client.reauth_after_s(login.lifetime_ms)
        self._reauth_at = None if after_s is None else monotonic_s() + after_s

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def send(self, api_key: int, version: int, body: dict, timeout_s: float | None = None) -> int:
        """Send one request; its correlation id."""
        if self._reauth_at is not None and not self.pipeline.in_flight and monotonic_s() >= self._reauth_at:
            assert self._security.sasl is not None, "only a SASL session is re-authenticated"
            self._authenticate(self._security.sasl)
        sock = self._open_socket()
        cid, frame = self.pipeline.request(api_key, version, body)
        try:
            sock.settimeout(self.timeout_s if timeout_s is None else timeout_s)
            sock.sendall(frame)
        except OSError as e:
            self._fail(f"send to {self.address} failed", _reason(e))
        if self.sent is not None:
            self.sent[(self.address, api_key)] += 1
        return cid

    def receive(self, timeout_s: float | None = None) -> dict:
        """The body of the oldest outstanding request's response."""
        assert self.pipeline.in_flight, "receive with no request outstanding"
        deadline = monotonic_s() + (self.timeout_s if timeout_s is None else timeout_s)
        try:
            size = self.pipeline.frame_size(self._read(SIZE.size, deadline))
            _, body = self.pipeline.complete(self._read(size, deadline))
        except PeerUnavailable as e:
            self._fail(self.address, e.reason)
        assert body is not None, "a blocking connection abandons no request"
        return body

    def request(self, api_key: int, version: int, body: dict, timeout_s: float | None = None) -> dict:
        """One round trip within ``timeout_s`` (the connection's by default)."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = monotonic_s() + timeout_s
        self.send(api_key, version, body, timeout_s)
        return self.receive(max(0.0, deadline - monotonic_s()))

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        self.pipeline.reset()

    def _open_socket(self) -> socket.socket:
        if self._sock is None:
            raise PeerUnavailable(f"connection to {self.address} is closed")
        return self._sock

    def _fail(self, what: str, reason: str):
        self.close()
        raise PeerUnavailable(f"{what}: {reason}", reason)

    def _read(self, n: int, deadline: float) -> memoryview:
        sock = self._open_socket()
        view = memoryview(bytearray(n))
        got = 0
        try:
            while got < n:
                remaining = deadline - monotonic_s()
                if remaining <= 0:
                    raise TimeoutError
                sock.settimeout(remaining)
                k = sock.recv_into(view[got:], n - got)
                if k == 0:
                    raise PeerUnavailable("the server closed the connection")
                got += k
        except TimeoutError:
            raise PeerUnavailable("timed out") from None
        except OSError as e:
            raise PeerUnavailable(_reason(e)) from None
        return view


def _reason(exc: OSError) -> str:
    return describe_failure(exc)
