"""The SASL gate of one connection on a SASL_PLAINTEXT / SASL_SSL listener.

Kafka's SaslServerAuthenticator rules, per connection:

- before authentication only ApiVersions (answered by the listener's dispatcher,
  which lists SaslHandshake 17 and SaslAuthenticate 36) and SaslHandshake v1 may
  come; anything else is ILLEGAL_SASL_STATE and the connection closes (v0, KIP-43's
  raw tokens, is gone in Kafka 4.0: KIP-896);
- SaslHandshake names a mechanism: an enabled one is answered with the enabled
  list and the connection waits for SaslAuthenticate; another is answered
  UNSUPPORTED_SASL_MECHANISM (with the list) and the connection closes;
- SaslAuthenticate carries the client's token: success answers NONE (and
  SessionLifetimeMs 0: no re-authentication, KIP-368's connections.max.reauth.ms is
  not implemented) and every later frame goes to the dispatcher; failure answers
  SASL_AUTHENTICATION_FAILED with Kafka's message and closes the connection. Failures
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
from .server import CloseConnection

__all__ = ["FAILURE_LOG_INTERVAL_S", "SaslGate", "sasl_sessions"]

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


class SaslGate:
    """Wraps the listener's dispatcher for one connection until it has authenticated."""

    def __init__(self, inner, mechanisms: Mapping[str, PlainAuthenticator], failures: _FailureLog):
        self._inner = inner
        self._mechanisms = mechanisms
        self._failures = failures
        self._state = _HANDSHAKE
        self._mechanism: PlainAuthenticator | None = None
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
        mechanism = self._mechanisms.get(body["Mechanism"])
        answer = {"ErrorCode": ErrorCode.NONE if mechanism else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                  "Mechanisms": enabled}
        parts = encode_response(header.api_key, header.api_version, header.correlation_id, answer)
        if mechanism is None:
            raise CloseConnection(f"UNSUPPORTED_SASL_MECHANISM {body['Mechanism']!r}", response=parts)
        self._mechanism, self._state = mechanism, _AUTHENTICATE
        return parts

    def _authenticate(self, header, body: dict, client_host: str):
        user = self._mechanism.authenticate(body["AuthBytes"])
        ok = user is not None
        answer = {"ErrorCode": ErrorCode.NONE if ok else ErrorCode.SASL_AUTHENTICATION_FAILED,
                  "ErrorMessage": None if ok else FAILED, "AuthBytes": b"", "SessionLifetimeMs": 0}
        parts = encode_response(header.api_key, header.api_version, header.correlation_id, answer)
        if not ok:
            self._failures.failed(client_host)
            raise CloseConnection("SASL_AUTHENTICATION_FAILED", response=parts)
        self.principal, self._state = f"User:{user}", _AUTHENTICATED
        return parts


def sasl_sessions(listener: str, mechanisms: Mapping[str, PlainAuthenticator]) -> Callable:
    """The per-connection wrapper a SASL listener's ``Server`` applies to its dispatcher."""
    failures = _FailureLog(listener)
    return lambda inner: SaslGate(inner, mechanisms, failures)
