"""ListClientMetricsResources (key 74), version 0, flexible (KIP-714): the names of the
client metrics subscriptions (CLIENT_METRICS config resources)."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([], name="ListClientMetricsResourcesRequest")

_RESOURCE = Struct([
    Field("Name", "string"),
], name="ClientMetricsResource")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ClientMetricsResources", [_RESOURCE]),
], name="ListClientMetricsResourcesResponse")

SPEC = ApiSpec(ApiKey.LIST_CLIENT_METRICS_RESOURCES, "ListClientMetricsResources", 0, 0, 0, REQUEST, RESPONSE)
