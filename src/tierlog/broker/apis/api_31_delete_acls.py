"""DeleteAcls (31), v1-3 (v0 is gone in Kafka 4.0, KIP-896): forwarded to the active controller.

Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every filter);
without an authorizer every filter answers SECURITY_DISABLED, as Kafka's. The
controller removes every ACL each filter matches (RemoveAccessControlEntryRecords,
``controller.acl_control``); the broker answers once its own image has caught up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response

if TYPE_CHECKING:
    from tierlog.protocol.typed.delete_acls import DeleteAclsRequest, DeleteAclsResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DELETE_ACLS, 1, 3


def handle(broker: HandlerContext, header: RequestHeader, request: DeleteAclsRequest) -> Response[DeleteAclsResponse]:
    return authz.forward_acl_write(broker, header, request, _all)


def _all(request: DeleteAclsRequest, code: ErrorCode, message: str | None) -> DeleteAclsResponse:
    return {"ThrottleTimeMs": 0, "FilterResults": [{"ErrorCode": code, "ErrorMessage": message, "MatchingAcls": []}
                                                   for _ in request["Filters"]]}
