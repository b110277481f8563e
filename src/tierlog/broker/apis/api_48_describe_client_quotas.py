"""DescribeClientQuotas (48), v0-1 (KIP-546): answered from the broker's image (Kafka's
ClientQuotasImage.describe), after catching up with the quorum's high watermark so that a
describe right after an alter through another broker shows it (as DescribeConfigs).

A filter component matches an entity type by exact name (0), the default (1) or any
name (2); ``Strict`` leaves out entities with types the filter does not name. A bad
filter (an unknown entity or match type, a type named twice, ip mixed with user or
client-id) is INVALID_REQUEST with the reason. Needs DESCRIBE_CONFIGS on the cluster
(else CLUSTER_AUTHORIZATION_FAILED, as Kafka).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.metadata.client_quotas import check_filter
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext
from .forward import catch_up

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_client_quotas import (
        DescribeClientQuotasRequest,
        DescribeClientQuotasResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1
CATCH_UP_TIMEOUT_S = 2.0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if not authz.cluster(broker, header, authz.Op.DESCRIBE_CONFIGS):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    components = request["Components"]
    problem = check_filter(components)
    if problem is not None:
        return _error(ErrorCode.INVALID_REQUEST, problem)
    await catch_up(broker, CATCH_UP_TIMEOUT_S)
    entries = broker.image.client_quotas.describe(components, request["Strict"])
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "Entries": entries}  # type: ignore[typeddict-item]


def _error(code: int, message: str | None) -> DescribeClientQuotasResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "Entries": None}
