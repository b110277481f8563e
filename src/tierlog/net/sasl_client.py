"""The client side of SASL, without IO: the requests an outbound connection sends right
after it connects (and its TLS handshake, for SASL_SSL), and what their answers mean.

SaslHandshake v1 names the mechanism; then SaslAuthenticate requests carry the
mechanism's tokens: PLAIN one (``\\0user\\0password``, RFC 4616, empty authzid), SCRAM
two (``net.sasl_scram.ScramClient``; the server's final message is verified, so a server
without the user's credential cannot pose as the cluster). ``ClientExchange`` gives the
next token for each answer until it returns None. An error in any answer fails the
connection with the broker's message (``SASL authentication failed: Authentication
failed: Invalid username or password``); ``net.blocking`` and ``net.client`` run the
exchange before the connection carries anything else.

Re-authentication (KIP-368): the last answer's SessionLifetimeMs (``lifetime_ms``; 0: the
session never expires) says when the broker will stop serving the connection;
``reauth_after_s`` is when to log in again on it, at ``REAUTH_AT`` of the lifetime (Kafka's
clients pick 85-95%), before a request and with nothing in flight behind the exchange.
"""

from __future__ import annotations

from tierlog.metadata.scram import ScramMechanism
from tierlog.net.request_pipeline import AuthenticationFailed
from tierlog.net.sasl_scram import SaslFailure, ScramClient
from tierlog.net.security import SaslCredentials
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, describe

__all__ = [
    "HANDSHAKE_VERSION",
    "REAUTH_AT",
    "ClientExchange",
    "authenticate_request",
    "check_authenticate",
    "check_handshake",
    "handshake_request",
    "reauth_after_s",
]

HANDSHAKE_VERSION = 1          # v0's raw tokens are gone (KIP-896)
AUTHENTICATE_VERSION = 1       # v1: SessionLifetimeMs (KIP-368)
REAUTH_AT = 0.85               # of the session lifetime


def handshake_request(creds: SaslCredentials) -> tuple[int, int, dict]:
    return ApiKey.SASL_HANDSHAKE, HANDSHAKE_VERSION, {"Mechanism": creds.mechanism}


def check_handshake(answer: dict, creds: SaslCredentials) -> None:
    if answer["ErrorCode"] != ErrorCode.NONE:
        enabled = ", ".join(answer.get("Mechanisms") or []) or "none"
        reason = f"SASL mechanism {creds.mechanism} refused ({describe(answer['ErrorCode'])}; enabled: {enabled})"
        raise AuthenticationFailed(reason, reason)


def authenticate_request(token: bytes) -> tuple[int, int, dict]:
    return ApiKey.SASL_AUTHENTICATE, AUTHENTICATE_VERSION, {"AuthBytes": token}


def check_authenticate(answer: dict) -> None:
    if answer["ErrorCode"] != ErrorCode.NONE:
        reason = f"SASL authentication failed: {answer.get('ErrorMessage') or describe(answer['ErrorCode'])}"
        raise AuthenticationFailed(reason, reason)


def reauth_after_s(lifetime_ms: int) -> float | None:
    """Seconds after a login to re-authenticate (None: the session does not expire)."""
    return lifetime_ms * REAUTH_AT / 1000 if lifetime_ms > 0 else None


class ClientExchange:
    """One login: ``first()`` is the first token, ``next(answer)`` the token after the broker's
    SaslAuthenticate answer (checked here), None once the mechanism is done."""

    def __init__(self, creds: SaslCredentials):
        scram = ScramMechanism.by_name(creds.mechanism)
        self._scram = None if scram is None else ScramClient(scram, creds.username, creds.password)
        self._plain = b"\x00" + creds.username.encode() + b"\x00" + creds.password.encode()
        self._step = 0
        self.lifetime_ms = 0        # the broker's SessionLifetimeMs, once done

    def first(self) -> bytes:
        return self._plain if self._scram is None else self._scram.first()

    def next(self, answer: dict) -> bytes | None:
        check_authenticate(answer)
        self._step += 1
        self.lifetime_ms = answer.get("SessionLifetimeMs", 0)
        if self._scram is None or self._step > 2:
            return None
        try:
            if self._step == 1:
                return self._scram.final(bytes(answer["AuthBytes"]))
            self._scram.verify(bytes(answer["AuthBytes"]))
        except SaslFailure as e:
            reason = f"SASL authentication failed: {e}"
            raise AuthenticationFailed(reason, reason) from None
        return None
