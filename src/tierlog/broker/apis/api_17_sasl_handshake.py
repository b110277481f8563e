"""SaslHandshake (17), v0-1: v1 is followed by SaslAuthenticate requests (KIP-152), v0 by
raw size-prefixed SASL tokens (KIP-43). Kafka 4.0 dropped v0 (KIP-896); tierlog keeps it so
that older clients log in (librdkafka before 2.x's ApiVersions checks, e.g. Debian's kcat,
needs v0 listed; clients written for 0.10-0.11 send v0).

Listed by ApiVersions on every listener, as Kafka does. On a SASL listener the
connection's ``net.sasl_gate.SaslGate`` answers it before authentication; a
handshake that reaches this handler (a PLAINTEXT / SSL listener, or a second one
after authentication: re-authentication, KIP-368, is not implemented) is answered
ILLEGAL_SASL_STATE, as Kafka's KafkaApis does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.sasl_handshake import (
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.SASL_HANDSHAKE, 0, 1


def handle(broker: HandlerContext, header: RequestHeader, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return {"ErrorCode": ErrorCode.ILLEGAL_SASL_STATE, "Mechanisms": []}
