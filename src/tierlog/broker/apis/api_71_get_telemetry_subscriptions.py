"""GetTelemetrySubscriptions (71), v0 (KIP-714): which metrics a client should push, how often,
compressed how and how large at most; a new client instance id for a client that sends the zero
uuid. Kafka's rules (one request per push interval, THROTTLING_QUOTA_EXCEEDED sooner) are in
``broker.client_telemetry``; the subscriptions are the CLIENT_METRICS config resources of the
broker's image. No ACL: any client that may connect may ask, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.get_telemetry_subscriptions import (
        GetTelemetrySubscriptionsRequest,
        GetTelemetrySubscriptionsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0


def client_labels(header: RequestHeader) -> dict[str, str]:
    """What the broker knows of the client from the request (KIP-714's client selectors and labels)."""
    return {"client_id": header.client_id or "", "principal": header.principal,
            "client_source_address": header.client_host}


def handle(broker: HandlerContext, header: RequestHeader,
           request: GetTelemetrySubscriptionsRequest) -> GetTelemetrySubscriptionsResponse:
    answer: GetTelemetrySubscriptionsResponse = broker.telemetry.get_subscriptions(  # type: ignore[assignment]
        bytes(request["ClientInstanceId"]), client_labels(header), broker.clock_ms())
    return answer
