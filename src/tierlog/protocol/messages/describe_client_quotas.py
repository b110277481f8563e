"""DescribeClientQuotas (key 48), versions 0-1, flexible from 1 (KIP-546).

A filter of components (entity type, match type 0 exact / 1 default / 2 any, name) and
whether the match is strict; the answer lists each matching entity with its values.
Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_COMPONENT = Struct([
    Field("EntityType", "string"), Field("MatchType", "int8"), Field("Match", "string", nullable="0+"),
], name="ComponentData")

REQUEST = Struct([
    Field("Components", [_COMPONENT]),
    Field("Strict", "bool"),
], name="DescribeClientQuotasRequest")

_ENTITY = Struct([
    Field("EntityType", "string"), Field("EntityName", "string", nullable="0+"),
], name="DescribeClientQuotasEntity")

_VALUE = Struct([
    Field("Key", "string"), Field("Value", "float64"),
], name="DescribeClientQuotasValue")

_ENTRY = Struct([
    Field("Entity", [_ENTITY]), Field("Values", [_VALUE]),
], name="DescribeClientQuotasEntry")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("Entries", [_ENTRY], nullable="0+"),
], name="DescribeClientQuotasResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 0, 1, 1, REQUEST, RESPONSE)
