"""DescribeUserScramCredentials (50), v0: answered from the broker's image (Kafka's
ScramImage.describe), after catching up with the quorum's high watermark so that a
describe right after an alter through another broker shows it (as DescribeConfigs).

Per user its mechanisms and iteration counts; a user named twice is DUPLICATE_RESOURCE,
one without credentials RESOURCE_NOT_FOUND; null or no users: every user. Salts and keys
never leave the cluster. Needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED, as Kafka).
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
    from tierlog.protocol.typed.describe_user_scram_credentials import (
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0
CATCH_UP_TIMEOUT_S = 2.0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    if not authz.cluster(broker, header, authz.Op.DESCRIBE):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "ErrorMessage": None,
                "Results": []}
    await catch_up(broker, CATCH_UP_TIMEOUT_S)
    users = [u["Name"] for u in request.get("Users") or []]
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None,
            "Results": broker.image.scram.describe(users)}
