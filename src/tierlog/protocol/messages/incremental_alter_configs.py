"""IncrementalAlterConfigs (key 44), versions 0-1, flexible from 1.

ConfigOperation: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_CONFIG = Struct([
    Field("Name", "string"),
    Field("ConfigOperation", "int8"),
    Field("Value", "string", nullable="0+"),
], name="AlterableConfig")

_RESOURCE = Struct([
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
    Field("Configs", [_CONFIG]),
], name="AlterConfigsResource")

REQUEST = Struct([
    Field("Resources", [_RESOURCE]),
    Field("ValidateOnly", "bool"),
], name="IncrementalAlterConfigsRequest")

_RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+"),
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
], name="AlterConfigsResourceResponse")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Responses", [_RESPONSE]),
], name="IncrementalAlterConfigsResponse")

SPEC = ApiSpec(ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", 0, 1, 1,
               REQUEST, RESPONSE)
