"""The client side of SASL PLAIN, without IO: the two requests an outbound connection sends
right after it connects (and its TLS handshake, for SASL_SSL), and what their answers mean.

SaslHandshake v1 names the mechanism; SaslAuthenticate carries ``\\0user\\0password``
(RFC 4616, empty authzid). An error in either answer fails the connection with the
broker's message (``SASL authentication failed: Authentication failed: Invalid username
or password``); ``net.blocking`` and ``net.client`` run the exchange before the
connection carries anything else.
"""

from __future__ import annotations

from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.net.security import SaslCredentials
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, describe

__all__ = ["HANDSHAKE_VERSION", "authenticate_request", "check_authenticate", "check_handshake",
           "handshake_request"]

HANDSHAKE_VERSION = 1          # v0's raw tokens are gone (KIP-896)
AUTHENTICATE_VERSION = 1       # v1: SessionLifetimeMs (not acted on: no re-authentication yet)


def handshake_request(creds: SaslCredentials) -> tuple[int, int, dict]:
    return ApiKey.SASL_HANDSHAKE, HANDSHAKE_VERSION, {"Mechanism": creds.mechanism}


def check_handshake(answer: dict, creds: SaslCredentials) -> None:
    if answer["ErrorCode"] != ErrorCode.NONE:
        enabled = ", ".join(answer.get("Mechanisms") or []) or "none"
        reason = f"SASL mechanism {creds.mechanism} refused ({describe(answer['ErrorCode'])}; enabled: {enabled})"
        raise PeerUnavailable(reason, reason)


def authenticate_request(creds: SaslCredentials) -> tuple[int, int, dict]:
    token = b"\x00" + creds.username.encode() + b"\x00" + creds.password.encode()
    return ApiKey.SASL_AUTHENTICATE, AUTHENTICATE_VERSION, {"AuthBytes": token}


def check_authenticate(answer: dict) -> None:
    if answer["ErrorCode"] != ErrorCode.NONE:
        reason = f"SASL authentication failed: {answer.get('ErrorMessage') or describe(answer['ErrorCode'])}"
        raise PeerUnavailable(reason, reason)
