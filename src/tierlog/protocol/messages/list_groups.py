"""ListGroups (key 16), versions 0-5, flexible from 3.

v1 ThrottleTimeMs; v4 StatesFilter and GroupState; v5 TypesFilter and GroupType (KIP-848).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("StatesFilter", ["string"], versions="4+"),
    Field("TypesFilter", ["string"], versions="5+"),
], name="ListGroupsRequest")

_GROUP = Struct([
    Field("GroupId", "string"),
    Field("ProtocolType", "string"),
    Field("GroupState", "string", versions="4+"),
    Field("GroupType", "string", versions="5+"),
], name="ListedGroup")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("ErrorCode", "int16"),
    Field("Groups", [_GROUP]),
], name="ListGroupsResponse")

SPEC = ApiSpec(ApiKey.LIST_GROUPS, "ListGroups", 0, 5, 3, REQUEST, RESPONSE)
