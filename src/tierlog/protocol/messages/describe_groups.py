"""DescribeGroups (key 15), versions 0-5, flexible from 5.

v1 ThrottleTimeMs; v3 IncludeAuthorizedOperations and AuthorizedOperations;
v4 GroupInstanceId.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_AUTHORIZED_OPERATIONS_UNKNOWN = -2147483648

REQUEST = Struct([
    Field("Groups", ["string"]),
    Field("IncludeAuthorizedOperations", "bool", versions="3+"),
], name="DescribeGroupsRequest")

_MEMBER = Struct([
    Field("MemberId", "string"),
    Field("GroupInstanceId", "string", versions="4+", nullable="4+", default=None),
    Field("ClientId", "string"),
    Field("ClientHost", "string"),
    Field("MemberMetadata", "bytes"),
    Field("MemberAssignment", "bytes"),
], name="DescribedGroupMember")

_GROUP = Struct([
    Field("ErrorCode", "int16"),
    Field("GroupId", "string"),
    Field("GroupState", "string"),
    Field("ProtocolType", "string"),
    Field("ProtocolData", "string"),
    Field("Members", [_MEMBER]),
    Field("AuthorizedOperations", "int32", versions="3+",
          default=_AUTHORIZED_OPERATIONS_UNKNOWN),
], name="DescribedGroup")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("Groups", [_GROUP]),
], name="DescribeGroupsResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_GROUPS, "DescribeGroups", 0, 5, 5, REQUEST, RESPONSE)
