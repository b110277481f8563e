"""ListGroups (key 16), versions 0-4, flexible from 3.

v1 ThrottleTimeMs; v4 StatesFilter and GroupState.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("StatesFilter", ["string"], versions="4+"),
], name="ListGroupsRequest")

_GROUP = Struct([
    Field("GroupId", "string"),
    Field("ProtocolType", "string"),
    Field("GroupState", "string", versions="4+"),
], name="ListedGroup")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("ErrorCode", "int16"),
    Field("Groups", [_GROUP]),
], name="ListGroupsResponse")

SPEC = ApiSpec(ApiKey.LIST_GROUPS, "ListGroups", 0, 4, 3, REQUEST, RESPONSE)
