"""SaslAuthenticate (36), v0-2: SASL tokens after SaslHandshake v1 (KIP-152).

Answered by the connection's ``net.sasl_gate.SaslGate`` on a SASL listener; one
that reaches this handler (no handshake on this connection, or after
authentication) is ILLEGAL_SASL_STATE, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.sasl_authenticate import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.SASL_AUTHENTICATE, 0, 2


def handle(broker: HandlerContext, header: RequestHeader, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return {"ErrorCode": ErrorCode.ILLEGAL_SASL_STATE, "ErrorMessage": "Unexpected SaslAuthenticate request",
            "AuthBytes": b"", "SessionLifetimeMs": 0}
