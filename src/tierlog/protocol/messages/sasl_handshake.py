"""SaslHandshake (key 17), versions 0-1, never flexible.

v0 was followed by raw SASL tokens (KIP-43), v1 by SaslAuthenticate requests
(KIP-152); Kafka 4.0 serves v1 only (KIP-896), tierlog both. The response lists the mechanisms
the listener has enabled.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("Mechanism", "string"),
], name="SaslHandshakeRequest")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("Mechanisms", ["string"]),
], name="SaslHandshakeResponse")

SPEC = ApiSpec(ApiKey.SASL_HANDSHAKE, "SaslHandshake", 0, 1, 99, REQUEST, RESPONSE)
