"""The SASL gate of one connection on a SASL_PLAINTEXT / SASL_SSL listener.

Kafka's SaslServerAuthenticator rules, per connection:

- before authentication only ApiVersions (answered by the listener's dispatcher,
  which lists SaslHandshake 17 v0-1 and SaslAuthenticate 36) and SaslHandshake may
  come; anything else is ILLEGAL_SASL_STATE and the connection closes;
- SaslHandshake names a mechanism: an enabled one is answered with the enabled
  list; another is answered UNSUPPORTED_SASL_MECHANISM (with the list) and the
  connection closes;
- after a v1 handshake the tokens come in SaslAuthenticate requests (KIP-152): each
  carries the client's token to the mechanism's per-connection session (PLAIN: one
  round trip; SCRAM, ``net.sasl_scram``: two) and each answer the session's token;
  failure answers SASL_AUTHENTICATION_FAILED with Kafka's message;
- after a v0 handshake (KIP-43, the clients before Kafka 1.0 and librdkafka against
  brokers without SaslAuthenticate; Kafka 4.0 dropped it, KIP-896, tierlog keeps it for
  those clients) every frame until the session is complete is a raw token: an int32 size
  and the token, no request header; each answer is the session's token framed the same
  way (PLAIN's is empty, as Kafka sends it); a failure has no answer, the connection just
  closes;
- once the session is complete every later frame goes to the dispatcher; a failed login
  is closed ``connection.failed.authentication.delay.ms`` after its answer (KIP-306;
  nothing is read meanwhile). Failures are logged at most once per
  ``FAILURE_LOG_INTERVAL_S`` with a count, never the user name or the token.

Re-authentication (KIP-368, Kafka's KafkaChannel / SocketServer rules): with
``connections.max.reauth.ms`` > 0 for the mechanism (``reauth_ms``), the last
SaslAuthenticate answer carries it as SessionLifetimeMs (v1+) and the session expires that
long after. An authenticated connection's SaslHandshake v1 then starts a re-authentication
(not within ``REAUTH_MIN_INTERVAL_S`` of the previous one's start; without an expiry, or
too soon, it goes to the dispatcher, which answers ILLEGAL_SASL_STATE; a v0 handshake
cannot re-authenticate and closes the connection): the same
mechanism (another is answered at the handshake and refused at SaslAuthenticate) and the
same principal (``Cannot change principals during re-authentication``) or the
connection closes as a failed login. Any other request after the expiry closes the
connection, unanswered (v0 clients, which cannot re-authenticate, included).

Transitions: HANDSHAKE -> AUTHENTICATE (v1) | RAW_TOKENS (v0) -> AUTHENTICATED ->
(SaslHandshake v1, expiry set) HANDSHAKE; HANDSHAKE / AUTHENTICATE / RAW_TOKENS -> closed;
AUTHENTICATED -> closed once expired.
``principal`` is ``User:<name>`` once authenticated (kept while re-authenticating).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from tierlog.clock import monotonic_s
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

__all__ = ["FAILURE_LOG_INTERVAL_S", "REAUTH_MIN_INTERVAL_S", "PlainSession", "SaslGate", "sasl_sessions"]

log = logging.getLogger(__name__)
FAILURE_LOG_INTERVAL_S = 60.0
_HANDSHAKE, _AUTHENTICATE, _AUTHENTICATED = "handshake", "authenticate", "authenticated"
_RAW_TOKENS = "raw tokens"      # after a SaslHandshake v0 (KIP-43)
REAUTH_MIN_INTERVAL_S = 1.0     # Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS


class _FailureLog:
    """At most one log line per interval, counting the failures in between."""

    def __init__(self, listener: str):
        self.listener = listener
        self.suppressed = 0
        self.last = float("-inf")

    def failed(self, client_host: str) -> None:
        now = monotonic_s()
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


class SaslServerSession(Protocol):
    """One connection's server side of a SASL exchange (PLAIN, SCRAM, or a refused re-authentication)."""

    complete: bool
    user: str | None
    failure_message: str

    def evaluate(self, token: bytes) -> bytes: ...


class _WrongMechanism:
    """A re-authentication that named another mechanism: Kafka answers the handshake, then
    refuses the token (SaslServerAuthenticator's REAUTH_BAD_MECHANISM)."""

    complete = False
    user: str | None = None

    def __init__(self, asked: str, previous: str):
        self.failure_message = (f"SASL mechanism '{asked}' requested by client is not supported for "
                                f"re-authentication of mechanism '{previous}'")

    def evaluate(self, token: bytes) -> bytes:
        raise SaslFailure(self.failure_message)


class SaslGate:
    """Wraps the listener's dispatcher for one connection: authentication first, then
    re-authentication and session expiry (KIP-368) when ``reauth_ms`` gives the mechanism a lifetime.

    ``mechanisms``: SASL name -> a factory of per-connection sessions (``evaluate(token) ->
    bytes`` raising ``SaslFailure``, ``complete``, ``user``, ``failure_message``);
    ``reauth_ms``: SASL name -> ``connections.max.reauth.ms`` (0 or absent: sessions never expire);
    ``clock``: monotonic seconds."""

    def __init__(self, inner, mechanisms: Mapping[str, Callable], failures: _FailureLog, failure_delay_s: float = 0.0,
                 reauth_ms: Mapping[str, int] | None = None, clock: Callable[[], float] = monotonic_s):
        self._inner = inner
        self._failure_delay_s = failure_delay_s
        self._mechanisms = mechanisms
        self._failures = failures
        self._reauth_ms = reauth_ms or {}
        self._clock = clock
        self._state = _HANDSHAKE
        self._session: SaslServerSession | None = None
        self._mechanism: str | None = None          # of the authenticated (or re-authenticating) session
        self._expires_at: float | None = None       # clock() past which the session is over; None: never
        self._reauth_started: float | None = None   # clock() of the last re-authentication's start
        self._reauthenticating = False
        self.principal: str | None = None

    def __call__(self, frame: bytearray, client_host: str = "", received_ns: int | None = None, **_):
        # authenticated: the SASL identity is the principal (also on SASL_SSL)
        if self._state == _AUTHENTICATED and (self._expires_at is None or not self._expired_or_reauth(frame)):
            return self._inner(frame, client_host, received_ns, principal=self.principal)
        if self._state == _RAW_TOKENS:
            return [self._step(bytes(frame), client_host, None)[0]]
        try:
            header, offset = decode_request_header(frame)
        except ProtocolError as e:
            raise CloseConnection(f"bad request header: {e}") from None
        if header.api_key == ApiKey.API_VERSIONS:
            return self._inner(frame, client_host, received_ns)
        if header.api_key == ApiKey.SASL_HANDSHAKE and self._state == _HANDSHAKE \
                and (header.api_version == 1 or (header.api_version == 0 and not self._reauthenticating)):
            return self._handshake(header, self._body(header, frame, offset))
        if header.api_key == ApiKey.SASL_AUTHENTICATE and self._state == _AUTHENTICATE \
                and header.api_version <= 2:
            return self._authenticate(header, self._body(header, frame, offset), client_host)
        raise CloseConnection(f"ILLEGAL_SASL_STATE: api key {header.api_key} v{header.api_version} "
                              f"while waiting for {self._state}")

    def _expired_or_reauth(self, frame: bytearray) -> bool:
        """With a session lifetime: True when ``frame`` (a SaslHandshake) starts a re-authentication,
        CloseConnection when the session is over (SocketServer checks the handshake first)."""
        now = self._clock()
        if int.from_bytes(frame[:2], "big") == ApiKey.SASL_HANDSHAKE and \
                (self._reauth_started is None or now - self._reauth_started >= REAUTH_MIN_INTERVAL_S):
            self._reauth_started, self._state, self._reauthenticating = now, _HANDSHAKE, True
            return True
        if self._expires_at is not None and now > self._expires_at:
            raise CloseConnection(f"{self.principal}'s SASL session expired (connections.max.reauth.ms="
                                  f"{self._reauth_ms.get(self._mechanism or '', 0)}) and was not re-authenticated")
        return False

    @staticmethod
    def _body(header, frame, offset) -> dict:
        try:
            return decode_request(header.api_key, header.api_version, frame, offset)
        except ProtocolError as e:
            raise CloseConnection(f"malformed SASL request: {e}") from None

    def _handshake(self, header, body: dict):
        enabled = sorted(self._mechanisms)
        asked = body["Mechanism"]
        factory = self._mechanisms.get(asked)
        answer = {"ErrorCode": ErrorCode.NONE if factory else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                  "Mechanisms": enabled}
        parts = encode_response(header.api_key, header.api_version, header.correlation_id, answer)
        if factory is None:
            raise CloseConnection(f"UNSUPPORTED_SASL_MECHANISM {asked!r}", response=parts)
        if self._reauthenticating and asked != self._mechanism:
            self._session = _WrongMechanism(asked, self._mechanism or "")
        else:
            self._session, self._mechanism = factory(), asked
        self._state = _AUTHENTICATE if header.api_version >= 1 else _RAW_TOKENS
        return parts

    def _authenticate(self, header, body: dict, client_host: str):
        def refusal(message: str) -> list:
            return self._answer(header, ErrorCode.SASL_AUTHENTICATION_FAILED, message, b"", 0)
        token, lifetime_ms = self._step(body["AuthBytes"], client_host, refusal)
        return self._answer(header, ErrorCode.NONE, None, token, lifetime_ms)

    def _step(self, token: bytes, client_host: str, refusal: Callable[[str], list] | None) -> tuple[bytes, int]:
        """The session's answer to ``token`` and, once complete, its lifetime in ms (0: none).
        A failure closes the connection after ``refusal(message)``'s answer (None: a v0
        client's raw tokens, which get no answer)."""
        session = self._session
        assert session is not None, "a token is taken only after a SaslHandshake"
        try:
            answer = session.evaluate(token)
            if session.complete:
                self._check_principal(f"User:{session.user}")
        except SaslFailure as e:
            log.debug("SASL %s failed: %s", self._what, e)
            message = str(e) if isinstance(e, _PrincipalChanged) else self._failure_text(session)
            self._failures.failed(client_host)
            raise CloseConnection("SASL_AUTHENTICATION_FAILED", response=refusal(message) if refusal else None,
                                  linger_s=self._failure_delay_s, logged=True) from None
        lifetime_ms = self._complete(f"User:{session.user}") if session.complete else 0
        return answer, lifetime_ms

    @property
    def _what(self) -> str:
        return "re-authentication" if self._reauthenticating else "authentication"

    def _failure_text(self, session) -> str:
        """Kafka's message, naming re-authentication when it was one (authenticationOrReauthenticationText)."""
        if self._reauthenticating:
            return session.failure_message.replace("during authentication", "during re-authentication")
        return session.failure_message

    def _check_principal(self, principal: str) -> None:
        """A re-authentication keeps the principal (Kafka's ReauthInfo.ensurePrincipalUnchanged)."""
        if self._reauthenticating and principal != self.principal:
            before = (self.principal or "").replace(":", ".", 1)
            raise _PrincipalChanged("Cannot change principals during re-authentication from "
                                    f"{before}: {principal.replace(':', '.', 1)}")

    def _complete(self, principal: str) -> int:
        """Authenticated: the session's lifetime in ms (0: it never expires)."""
        lifetime_ms = max(0, self._reauth_ms.get(self._mechanism or "", 0))
        self._expires_at = self._clock() + lifetime_ms / 1000 if lifetime_ms else None
        self.principal, self._state, self._session, self._reauthenticating = principal, _AUTHENTICATED, None, False
        return lifetime_ms

    @staticmethod
    def _answer(header, error: int, message: str | None, token: bytes, lifetime_ms: int) -> list:
        return encode_response(header.api_key, header.api_version, header.correlation_id,
                               {"ErrorCode": error, "ErrorMessage": message, "AuthBytes": token,
                                "SessionLifetimeMs": lifetime_ms})


class _PrincipalChanged(SaslFailure):
    """A re-authentication as someone else; its message is Kafka's answer to the client."""


def sasl_sessions(listener: str, mechanisms: Mapping[str, Callable], failure_delay_s: float = 0.0,
                  reauth_ms: Mapping[str, int] | None = None) -> Callable:
    """The per-connection wrapper a SASL listener's ``Server`` applies to its dispatcher.
    ``mechanisms``: name -> session factory, or a ``PlainAuthenticator`` (wrapped in
    ``PlainSession``); a failed login is closed ``failure_delay_s`` after its answer
    (``connection.failed.authentication.delay.ms``, KIP-306); ``reauth_ms``: name ->
    ``connections.max.reauth.ms`` (KIP-368)."""
    failures = _FailureLog(listener)
    factories = {name: (lambda a=m: PlainSession(a)) if isinstance(m, PlainAuthenticator) else m
                 for name, m in mechanisms.items()}
    return lambda inner: SaslGate(inner, factories, failures, failure_delay_s, reauth_ms)
