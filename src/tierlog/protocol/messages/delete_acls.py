"""DeleteAcls (key 31), versions 0-3, flexible from 2; v1 adds the pattern type (KIP-290)."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_FILTER = Struct([
    Field("ResourceTypeFilter", "int8"),
    Field("ResourceNameFilter", "string", nullable="0+"),
    Field("PatternTypeFilter", "int8", versions="1+", default=3),
    Field("PrincipalFilter", "string", nullable="0+"),
    Field("HostFilter", "string", nullable="0+"),
    Field("Operation", "int8"),
    Field("PermissionType", "int8"),
], name="DeleteAclsFilter")

REQUEST = Struct([Field("Filters", [_FILTER])], name="DeleteAclsRequest")

_MATCHING = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
    Field("PatternType", "int8", versions="1+", default=3),
    Field("Principal", "string"),
    Field("Host", "string"),
    Field("Operation", "int8"),
    Field("PermissionType", "int8"),
], name="DeleteAclsMatchingAcl")

_RESULT = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("MatchingAcls", [_MATCHING]),
], name="DeleteAclsFilterResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("FilterResults", [_RESULT]),
], name="DeleteAclsResponse")

SPEC = ApiSpec(ApiKey.DELETE_ACLS, "DeleteAcls", 0, 3, 2, REQUEST, RESPONSE)
