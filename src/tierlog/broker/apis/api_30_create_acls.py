"""CreateAcls (30), v1-3 (v0 is gone in Kafka 4.0, KIP-896): forwarded to the active controller.

Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every creation);
without an authorizer every creation answers SECURITY_DISABLED, as Kafka's. The
controller validates each binding and writes AccessControlEntryRecords
(``controller.acl_control``); the broker answers once its own image has caught up, so
a DescribeAcls or a check on this broker sees the new ACLs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response

if TYPE_CHECKING:
    from tierlog.protocol.typed.create_acls import CreateAclsRequest, CreateAclsResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.CREATE_ACLS, 1, 3


def handle(broker: HandlerContext, header: RequestHeader, request: CreateAclsRequest) -> Response[CreateAclsResponse]:
    return authz.forward_acl_write(broker, header, request, _all)


def _all(request: CreateAclsRequest, code: ErrorCode, message: str | None) -> CreateAclsResponse:
    return {"ThrottleTimeMs": 0, "Results": [{"ErrorCode": code, "ErrorMessage": message}
                                             for _ in request["Creations"]]}
