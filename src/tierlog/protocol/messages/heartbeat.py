"""Heartbeat (key 12), versions 0-4, flexible from 4.

v1 ThrottleTimeMs; v3 GroupInstanceId.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("GenerationId", "int32"),
    Field("MemberId", "string"),
    Field("GroupInstanceId", "string", versions="3+", nullable="3+", default=None),
], name="HeartbeatRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("ErrorCode", "int16"),
], name="HeartbeatResponse")

SPEC = ApiSpec(ApiKey.HEARTBEAT, "Heartbeat", 0, 4, 4, REQUEST, RESPONSE)
