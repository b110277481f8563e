"""DescribeAcls (key 29), versions 0-3, flexible from 2; v1 adds the pattern type (KIP-290)."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("ResourceTypeFilter", "int8"),
    Field("ResourceNameFilter", "string", nullable="0+"),
    Field("PatternTypeFilter", "int8", versions="1+", default=3),
    Field("PrincipalFilter", "string", nullable="0+"),
    Field("HostFilter", "string", nullable="0+"),
    Field("Operation", "int8"),
    Field("PermissionType", "int8"),
], name="DescribeAclsRequest")

_DESCRIPTION = Struct([
    Field("Principal", "string"),
    Field("Host", "string"),
    Field("Operation", "int8"),
    Field("PermissionType", "int8"),
], name="AclDescription")

_RESOURCE = Struct([
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
    Field("PatternType", "int8", versions="1+", default=3),
    Field("Acls", [_DESCRIPTION]),
], name="DescribeAclsResource")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("Resources", [_RESOURCE]),
], name="DescribeAclsResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_ACLS, "DescribeAcls", 0, 3, 2, REQUEST, RESPONSE)
