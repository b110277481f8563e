"""DeleteGroups (key 42), versions 0-2, flexible from 2."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("GroupsNames", ["string"]),
], name="DeleteGroupsRequest")

_RESULT = Struct([
    Field("GroupId", "string"),
    Field("ErrorCode", "int16"),
], name="DeletableGroupResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Results", [_RESULT]),
], name="DeleteGroupsResponse")

SPEC = ApiSpec(ApiKey.DELETE_GROUPS, "DeleteGroups", 0, 2, 2, REQUEST, RESPONSE)
