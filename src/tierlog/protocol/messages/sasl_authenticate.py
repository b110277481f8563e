"""SaslAuthenticate (key 36), versions 0-2, flexible from 2 (KIP-152).

One SASL token each way; v1 adds SessionLifetimeMs (KIP-368: the client
re-authenticates before it passes, 0 = no limit).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("AuthBytes", "bytes"),
], name="SaslAuthenticateRequest")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+"),
    Field("AuthBytes", "bytes"),
    Field("SessionLifetimeMs", "int64", versions="1+", default=0),
], name="SaslAuthenticateResponse")

SPEC = ApiSpec(ApiKey.SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2, 2, REQUEST, RESPONSE)
