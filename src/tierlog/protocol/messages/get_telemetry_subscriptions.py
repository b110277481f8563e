"""GetTelemetrySubscriptions (key 71), version 0, flexible (KIP-714): a client asks which of
its metrics the broker wants, how often, how compressed and how large at most."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("ClientInstanceId", "uuid"),
], name="GetTelemetrySubscriptionsRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ClientInstanceId", "uuid"),
    Field("SubscriptionId", "int32"),
    Field("AcceptedCompressionTypes", ["int8"]),
    Field("PushIntervalMs", "int32"),
    Field("TelemetryMaxBytes", "int32"),
    Field("DeltaTemporality", "bool"),
    Field("RequestedMetrics", ["string"]),
], name="GetTelemetrySubscriptionsResponse")

SPEC = ApiSpec(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, "GetTelemetrySubscriptions", 0, 0, 0, REQUEST, RESPONSE)
