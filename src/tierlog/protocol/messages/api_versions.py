"""ApiVersions (key 18), versions 0-4, flexible from 3.

v1 adds ThrottleTimeMs; v3 adds the client software name/version and the
feature tags (SupportedFeatures 0, FinalizedFeaturesEpoch 1, FinalizedFeatures
2, ZkMigrationReady 3). The response always travels with response header v0.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("ClientSoftwareName", "string", versions="3+"),
    Field("ClientSoftwareVersion", "string", versions="3+"),
], name="ApiVersionsRequest")

_API_VERSION = Struct([
    Field("ApiKey", "int16"),
    Field("MinVersion", "int16"),
    Field("MaxVersion", "int16"),
], name="ApiVersion")

_SUPPORTED_FEATURE = Struct([
    Field("Name", "string", versions="3+"),
    Field("MinVersion", "int16", versions="3+"),
    Field("MaxVersion", "int16", versions="3+"),
], name="SupportedFeatureKey")

_FINALIZED_FEATURE = Struct([
    Field("Name", "string", versions="3+"),
    Field("MaxVersionLevel", "int16", versions="3+"),
    Field("MinVersionLevel", "int16", versions="3+"),
], name="FinalizedFeatureKey")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("ApiKeys", [_API_VERSION]),
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("SupportedFeatures", [_SUPPORTED_FEATURE], versions="3+", tag=0),
    Field("FinalizedFeaturesEpoch", "int64", versions="3+", tag=1, default=-1),
    Field("FinalizedFeatures", [_FINALIZED_FEATURE], versions="3+", tag=2),
    Field("ZkMigrationReady", "bool", versions="3+", tag=3, default=False),
], name="ApiVersionsResponse")

SPEC = ApiSpec(ApiKey.API_VERSIONS, "ApiVersions", 0, 4, 3, REQUEST, RESPONSE)
