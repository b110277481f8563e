"""SyncGroup (key 14), versions 0-5, flexible from 4.

v1 ThrottleTimeMs; v3 GroupInstanceId; v5 ProtocolType and ProtocolName.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_ASSIGNMENT = Struct([
    Field("MemberId", "string"),
    Field("Assignment", "bytes"),
], name="SyncGroupRequestAssignment")

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("GenerationId", "int32"),
    Field("MemberId", "string"),
    Field("GroupInstanceId", "string", versions="3+", nullable="3+", default=None),
    Field("ProtocolType", "string", versions="5+", nullable="5+", default=None),
    Field("ProtocolName", "string", versions="5+", nullable="5+", default=None),
    Field("Assignments", [_ASSIGNMENT]),
], name="SyncGroupRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("ErrorCode", "int16"),
    Field("ProtocolType", "string", versions="5+", nullable="5+", default=None),
    Field("ProtocolName", "string", versions="5+", nullable="5+", default=None),
    Field("Assignment", "bytes"),
], name="SyncGroupResponse")

SPEC = ApiSpec(ApiKey.SYNC_GROUP, "SyncGroup", 0, 5, 4, REQUEST, RESPONSE)
