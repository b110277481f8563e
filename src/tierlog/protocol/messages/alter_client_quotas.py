"""AlterClientQuotas (key 49), versions 0-1, flexible from 1 (KIP-546).

Entries of an entity (entity type and name, null for the default) and its ops (key,
value, remove), with ValidateOnly; the answer gives an error per entry. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_ENTITY = Struct([
    Field("EntityType", "string"), Field("EntityName", "string", nullable="0+"),
], name="AlterClientQuotasEntity")

_OP = Struct([
    Field("Key", "string"), Field("Value", "float64"), Field("Remove", "bool"),
], name="AlterClientQuotasOp")

_ENTRY = Struct([
    Field("Entity", [_ENTITY]), Field("Ops", [_OP]),
], name="AlterClientQuotasEntry")

REQUEST = Struct([
    Field("Entries", [_ENTRY]),
    Field("ValidateOnly", "bool"),
], name="AlterClientQuotasRequest")

_RESULT = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("Entity", [_ENTITY]),
], name="AlterClientQuotasResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Entries", [_RESULT]),
], name="AlterClientQuotasResponse")

SPEC = ApiSpec(ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 0, 1, 1, REQUEST, RESPONSE)
