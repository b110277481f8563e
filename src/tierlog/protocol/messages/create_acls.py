"""CreateAcls (key 30), versions 0-3, flexible from 2; v1 adds the pattern type (KIP-290)."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_CREATION = Struct([
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
    Field("ResourcePatternType", "int8", versions="1+", default=3),
    Field("Principal", "string"),
    Field("Host", "string"),
    Field("Operation", "int8"),
    Field("PermissionType", "int8"),
], name="AclCreation")

REQUEST = Struct([Field("Creations", [_CREATION])], name="CreateAclsRequest")

_RESULT = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
], name="AclCreationResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Results", [_RESULT]),
], name="CreateAclsResponse")

SPEC = ApiSpec(ApiKey.CREATE_ACLS, "CreateAcls", 0, 3, 2, REQUEST, RESPONSE)
