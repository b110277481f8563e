"""ListClientMetricsResources (74), v0 (KIP-714): the names of the client metrics subscriptions
(CLIENT_METRICS config resources) in the broker's image, after catching up with the quorum (as
DescribeConfigs does). ACL: DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext
from .forward import catch_up

if TYPE_CHECKING:
    from tierlog.protocol.typed.list_client_metrics_resources import (
        ListClientMetricsResourcesRequest,
        ListClientMetricsResourcesResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LIST_CLIENT_METRICS_RESOURCES, 0, 0
CATCH_UP_TIMEOUT_S = 1.0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: ListClientMetricsResourcesRequest) -> ListClientMetricsResourcesResponse:
    if not authz.cluster(broker, header, authz.Op.DESCRIBE_CONFIGS):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "ClientMetricsResources": []}
    await catch_up(broker, CATCH_UP_TIMEOUT_S)
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE,
            "ClientMetricsResources": [{"Name": name} for name in sorted(broker.image.client_metrics)]}
