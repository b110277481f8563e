"""CreateAcls (30), v1-3 (v0 is gone in Kafka 4.0, KIP-896): forwarded to the active controller.

Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every creation);
without an authorizer every creation answers SECURITY_DISABLED, as Kafka's. The
controller validates each binding and writes AccessControlEntryRecords
(``controller.acl_control``); the broker answers once its own image has caught up, so
a DescribeAcls or a check on this broker sees the new ACLs.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, describe
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response
from .forward import TIMED_OUT_MESSAGE, forward_and_catch_up

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.CREATE_ACLS, 1, 3
NO_AUTHORIZER = "No Authorizer is configured."


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> Response:
    if broker.authorizer is None:
        return _all(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if not authz.cluster(broker, header, authz.Op.ALTER):
        return _all(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, describe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    return forward_and_catch_up(broker, header, request,
                                lambda r: _all(r, ErrorCode.REQUEST_TIMED_OUT, TIMED_OUT_MESSAGE))


def _all(request: dict, code: ErrorCode, message: str | None) -> dict:
    return {"ThrottleTimeMs": 0, "Results": [{"ErrorCode": code, "ErrorMessage": message}
                                             for _ in request["Creations"]]}
