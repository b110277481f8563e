"""PushTelemetry (key 72), version 0, flexible (KIP-714): a client's metrics, OpenTelemetry
MetricsData v1 protobuf, compressed with one of the accepted codecs."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("ClientInstanceId", "uuid"),
    Field("SubscriptionId", "int32"),
    Field("Terminating", "bool"),
    Field("CompressionType", "int8"),
    Field("Metrics", "bytes"),
], name="PushTelemetryRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
], name="PushTelemetryResponse")

SPEC = ApiSpec(ApiKey.PUSH_TELEMETRY, "PushTelemetry", 0, 0, 0, REQUEST, RESPONSE)
