"""PushTelemetry (72), v0 (KIP-714): a client's metrics, OpenTelemetry MetricsData protobuf
compressed with one of the accepted codecs, decoded into the node's /metrics
(``broker.telemetry_series``). Kafka's checks and errors (INVALID_REQUEST,
UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE, THROTTLING_QUOTA_EXCEEDED,
TELEMETRY_TOO_LARGE, INVALID_RECORD) are in ``broker.client_telemetry``. No ACL, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .api_71_get_telemetry_subscriptions import client_labels
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.push_telemetry import PushTelemetryRequest, PushTelemetryResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.PUSH_TELEMETRY, 0, 0


def handle(broker: HandlerContext, header: RequestHeader, request: PushTelemetryRequest) -> PushTelemetryResponse:
    error = broker.telemetry.push(request, client_labels(header), broker.clock_ms())
    return {"ThrottleTimeMs": 0, "ErrorCode": error}
