"""UnregisterBroker (key 64), version 0, flexible (KIP-631).

Removes a broker's registration from the cluster metadata. Nothing is left
out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("BrokerId", "int32"),
], name="UnregisterBrokerRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
], name="UnregisterBrokerResponse")

SPEC = ApiSpec(ApiKey.UNREGISTER_BROKER, "UnregisterBroker", 0, 0, 0, REQUEST, RESPONSE)
