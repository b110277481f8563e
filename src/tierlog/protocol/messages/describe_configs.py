"""DescribeConfigs (key 32), versions 0-4, flexible from 4.

v0 has IsDefault; v1 replaces it with ConfigSource and adds synonyms; v3 adds
ConfigType and Documentation.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_RESOURCE = Struct([
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
    Field("ConfigurationKeys", ["string"], nullable="0+"),
], name="DescribeConfigsResource")

REQUEST = Struct([
    Field("Resources", [_RESOURCE]),
    Field("IncludeSynonyms", "bool", versions="1+", default=False),
    Field("IncludeDocumentation", "bool", versions="3+", default=False),
], name="DescribeConfigsRequest")

_SYNONYM = Struct([
    Field("Name", "string", versions="1+"),
    Field("Value", "string", versions="1+", nullable="0+"),
    Field("Source", "int8", versions="1+"),
], name="DescribeConfigsSynonym")

_CONFIG = Struct([
    Field("Name", "string"),
    Field("Value", "string", nullable="0+"),
    Field("ReadOnly", "bool"),
    Field("IsDefault", "bool", versions="0"),
    Field("ConfigSource", "int8", versions="1+", default=-1),
    Field("IsSensitive", "bool"),
    Field("Synonyms", [_SYNONYM], versions="1+"),
    Field("ConfigType", "int8", versions="3+", default=0),
    Field("Documentation", "string", versions="3+", nullable="0+"),
], name="DescribeConfigsResourceResult")

_RESULT = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+"),
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
    Field("Configs", [_CONFIG]),
], name="DescribeConfigsResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Results", [_RESULT]),
], name="DescribeConfigsResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs", 0, 4, 4, REQUEST, RESPONSE)
