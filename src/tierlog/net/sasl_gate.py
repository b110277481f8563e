"""The SASL gate of one connection on a SASL_PLAINTEXT / SASL_SSL listener.

Kafka's SaslServerAuthenticator rules, per connection:

- before authentication only ApiVersions (answered by the listener's dispatcher,
  which lists SaslHandshake 17 and SaslAuthenticate 36) and SaslHandshake v1 may
  come; anything else is ILLEGAL_SASL_STATE and the connection closes (v0, KIP-43's
  raw tokens, is gone in Kafka 4.0: KIP-896);
- SaslHandshake names a mechanism: an enabled one is answered with the enabled
  list and the connection waits for SaslAuthenticate; another is answered
  UNSUPPORTED_SASL_MECHANISM (with the list) and the connection closes;
- SaslAuthenticate carries the client's token to the mechanism's per-connection
  session (PLAIN: one round trip; SCRAM, ``net.sasl_scram``: two); each answer carries
  the session's token; once the session is complete every later frame goes to the
  dispatcher (SessionLifetimeMs 0: no re-authentication, KIP-368's
  connections.max.reauth.ms is not implemented); failure answers
  SASL_AUTHENTICATION_FAILED with Kafka's message and closes the connection
  ``connection.failed.authentication.delay.ms`` later (KIP-306; nothing is read meanwhile). Failures
  are logged at most once per ``FAILURE_LOG_INTERVAL_S`` with a count, never the
  user name or the token.

Transitions: HANDSHAKE -> AUTHENTICATE -> AUTHENTICATED; HANDSHAKE / AUTHENTICATE ->
closed. ``principal`` is ``User:<name>`` once authenticated.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from tierlog.protocol import (
    ProtocolError,
    decode_request,
    decode_request_header,
    encode_response,
)
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

from .sasl_plain import FAILED, PlainAuthenticator
from .sasl_scram import SaslFailure
from .server import CloseConnection

__all__ = ["FAILURE_LOG_INTERVAL_S", "PlainSession", "SaslGate", "sasl_sessions"]

log = logging.getLogger(__name__)
FAILURE_LOG_INTERVAL_S = 60.0
_HANDSHAKE, _AUTHENTICATE, _AUTHENTICATED = "handshake", "authenticate", "authenticated"


class _FailureLog:
    """At most one log line per interval, counting the failures in between."""

    def __init__(self, listener: str):
        self.listener = listener
        self.suppressed = 0
        self.last = float("-inf")

    def failed(self, client_host: str) -> None:
        now = time.monotonic()
        if now - self.last < FAILURE_LOG_INTERVAL_S:
            self.suppressed += 1
            return
        log.info("SASL authentication failed on listener %s from %s (%d more failures in the last %.0fs)",
                 self.listener, client_host, self.suppressed, FAILURE_LOG_INTERVAL_S)
        self.suppressed, self.last = 0, now


class PlainSession:
    """PLAIN as a one-step session (the users are the listener's ``PlainAuthenticator``)."""

    failure_message = FAILED

    def __init__(self, authenticator: PlainAuthenticator):
        self._authenticator = authenticator
        self.complete = False
        self.user: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("PLAIN exchange already finished")
        self.user = self._authenticator.authenticate(token)
        if self.user is None:
            raise SaslFailure("invalid PLAIN credentials")
        self.complete = True
        return b""


class SaslGate:
    """Wraps the listener's dispatcher for one connection until it has authenticated.

    ``mechanisms``: SASL name -> a factory of per-connection sessions (``evaluate(token) ->
    bytes`` raising ``SaslFailure``, ``complete``, ``user``, ``failure_message``)."""

    def __init__(self, inner, mechanisms: Mapping[str, Callable], failures: _FailureLog, failure_delay_s: float = 0.0):
        self._inner = inner
        self._failure_delay_s = failure_delay_s
        self._mechanisms = mechanisms
        self._failures = failures
        self._state = _HANDSHAKE
        self._session = None
        self.principal: str | None = None

    def __call__(self, frame: bytearray, client_host: str = "", received_ns: int | None = None, **_):
        if self._state == _AUTHENTICATED:       # the SASL identity is the principal (also on SASL_SSL)
            return self._inner(frame, client_host, received_ns, principal=self.principal)
        try:
            header, offset = decode_request_header(frame)
        except ProtocolError as e:
            raise CloseConnection(f"bad request header: {e}") from None
        if header.api_key == ApiKey.API_VERSIONS:
            return self._inner(frame, client_host, received_ns)
        if header.api_key == ApiKey.SASL_HANDSHAKE and self._state == _HANDSHAKE and header.api_version == 1:
            return self._handshake(header, self._body(header, frame, offset))
        if header.api_key == ApiKey.SASL_AUTHENTICATE and self._state == _AUTHENTICATE \
                and header.api_version <= 2:
            return self._authenticate(header, self._body(header, frame, offset), client_host)
        raise CloseConnection(f"ILLEGAL_SASL_STATE: api key {header.api_key} v{header.api_version} "
                              f"while waiting for {self._state}")

    @staticmethod
    def _body(header, frame, offset) -> dict:
        try:
            return decode_request(header.api_key, header.api_version, frame, offset)
        except ProtocolError as e:
            raise CloseConnection(f"malformed SASL request: {e}") from None

    def _handshake(self, header, body: dict):
        enabled = sorted(self._mechanisms)
        factory = self._mechanisms.get(body["Mechanism"])
        answer = {"ErrorCode": ErrorCode.NONE if factory else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                  "Mechanisms": enabled}
        parts = encode_response(header.api_key, header.api_version, header.correlation_id, answer)
        if factory is None:
            raise CloseConnection(f"UNSUPPORTED_SASL_MECHANISM {body['Mechanism']!r}", response=parts)
        self._session, self._state = factory(), _AUTHENTICATE
        return parts

    def _authenticate(self, header, body: dict, client_host: str):
        session = self._session
        try:
            token = session.evaluate(body["AuthBytes"])
        except SaslFailure as e:
            log.debug("SASL authentication failed: %s", e)
            answer = {"ErrorCode": ErrorCode.SASL_AUTHENTICATION_FAILED, "ErrorMessage": session.failure_message,
                      "AuthBytes": b"", "SessionLifetimeMs": 0}
            self._failures.failed(client_host)
            raise CloseConnection("SASL_AUTHENTICATION_FAILED", response=encode_response(
                header.api_key, header.api_version, header.correlation_id, answer),
                linger_s=self._failure_delay_s) from None
        answer = {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "AuthBytes": token, "SessionLifetimeMs": 0}
        if session.complete:
            self.principal, self._state, self._session = f"User:{session.user}", _AUTHENTICATED, None
        return encode_response(header.api_key, header.api_version, header.correlation_id, answer)


def sasl_sessions(listener: str, mechanisms: Mapping[str, Callable], failure_delay_s: float = 0.0) -> Callable:
    """The per-connection wrapper a SASL listener's ``Server`` applies to its dispatcher.
    ``mechanisms``: name -> session factory, or a ``PlainAuthenticator`` (wrapped in
    ``PlainSession``); a failed login is closed ``failure_delay_s`` after its answer
    (``connection.failed.authentication.delay.ms``, KIP-306)."""
    failures = _FailureLog(listener)
    factories = {name: (lambda a=m: PlainSession(a)) if isinstance(m, PlainAuthenticator) else m
                 for name, m in mechanisms.items()}
    return lambda inner: SaslGate(inner, factories, failures, failure_delay_s)
