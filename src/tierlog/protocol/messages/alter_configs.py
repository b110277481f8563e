"""AlterConfigs (key 33), versions 0-2, flexible from 2: the legacy whole-set alter.

Each resource's Configs is its complete new dynamic config set (a key not
given is deleted). v1 is v0; v2 is the first flexible version. Nothing is
left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_CONFIG = Struct([
    Field("Name", "string"),
    Field("Value", "string", nullable="0+"),
], name="AlterableConfig")

_RESOURCE = Struct([
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
    Field("Configs", [_CONFIG]),
], name="AlterConfigsResource")

REQUEST = Struct([
    Field("Resources", [_RESOURCE]),
    Field("ValidateOnly", "bool", default=False),
], name="AlterConfigsRequest")

_RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("ResourceType", "int8"),
    Field("ResourceName", "string"),
], name="AlterConfigsResourceResponse")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Responses", [_RESPONSE]),
], name="AlterConfigsResponse")

SPEC = ApiSpec(ApiKey.ALTER_CONFIGS, "AlterConfigs", 0, 2, 2, REQUEST, RESPONSE)
