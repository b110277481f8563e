"""JoinGroup (key 11), versions 0-9, flexible from 6.

v1 RebalanceTimeoutMs; v2 ThrottleTimeMs; v4 the two-step join
(MEMBER_ID_REQUIRED); v5 GroupInstanceId (static membership); v7 ProtocolType
in the response and a nullable ProtocolName; v8 Reason; v9 SkipAssignment.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PROTOCOL = Struct([
    Field("Name", "string"),
    Field("Metadata", "bytes"),
], name="JoinGroupRequestProtocol")

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("SessionTimeoutMs", "int32"),
    Field("RebalanceTimeoutMs", "int32", versions="1+", default=-1),
    Field("MemberId", "string"),
    Field("GroupInstanceId", "string", versions="5+", nullable="5+", default=None),
    Field("ProtocolType", "string"),
    Field("Protocols", [_PROTOCOL]),
    Field("Reason", "string", versions="8+", nullable="8+", default=None),
], name="JoinGroupRequest")

_MEMBER = Struct([
    Field("MemberId", "string"),
    Field("GroupInstanceId", "string", versions="5+", nullable="5+", default=None),
    Field("Metadata", "bytes"),
], name="JoinGroupResponseMember")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="2+"),
    Field("ErrorCode", "int16"),
    Field("GenerationId", "int32", default=-1),
    Field("ProtocolType", "string", versions="7+", nullable="7+", default=None),
    Field("ProtocolName", "string", nullable="7+"),
    Field("Leader", "string"),
    Field("SkipAssignment", "bool", versions="9+", default=False),
    Field("MemberId", "string"),
    Field("Members", [_MEMBER]),
], name="JoinGroupResponse")

SPEC = ApiSpec(ApiKey.JOIN_GROUP, "JoinGroup", 0, 9, 6, REQUEST, RESPONSE)
