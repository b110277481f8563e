"""LeaveGroup (key 13), versions 0-5, flexible from 4.

v1 ThrottleTimeMs; v3 batches members (Members replaces MemberId) with
per-member results; v5 Reason.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_MEMBER_IDENTITY = Struct([
    Field("MemberId", "string", versions="3+"),
    Field("GroupInstanceId", "string", versions="3+", nullable="3+", default=None),
    Field("Reason", "string", versions="5+", nullable="5+", default=None),
], name="MemberIdentity")

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("MemberId", "string", versions="0-2"),
    Field("Members", [_MEMBER_IDENTITY], versions="3+"),
], name="LeaveGroupRequest")

_MEMBER_RESPONSE = Struct([
    Field("MemberId", "string", versions="3+"),
    Field("GroupInstanceId", "string", versions="3+", nullable="3+"),
    Field("ErrorCode", "int16", versions="3+"),
], name="MemberResponse")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("ErrorCode", "int16"),
    Field("Members", [_MEMBER_RESPONSE], versions="3+"),
], name="LeaveGroupResponse")

SPEC = ApiSpec(ApiKey.LEAVE_GROUP, "LeaveGroup", 0, 5, 4, REQUEST, RESPONSE)
