"""DescribeAcls (29), v1-3 (v0 is gone in Kafka 4.0, KIP-896): the ACLs a filter matches.

Answered from this broker's image (its ACLs arrive through the metadata log), grouped
by resource pattern (type, name, pattern type) as Kafka groups them. Needs DESCRIBE on
the cluster (else CLUSTER_AUTHORIZATION_FAILED); without an authorizer the answer is
SECURITY_DISABLED, as Kafka's; a filter with an UNKNOWN field is INVALID_REQUEST.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.metadata.acls import filter_of
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode, describe
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_acls import (
        AclDescription,
        DescribeAclsRequest,
        DescribeAclsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_ACLS, 1, 3


def handle(broker: HandlerContext, header: RequestHeader, request: DescribeAclsRequest) -> DescribeAclsResponse:
    if broker.authorizer is None:
        return _error(ErrorCode.SECURITY_DISABLED, authz.NO_AUTHORIZER)
    if not authz.cluster(broker, header, authz.Op.DESCRIBE):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, describe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    f = filter_of(request)
    problem = f.problem()
    if problem is not None:
        return _error(ErrorCode.INVALID_REQUEST, problem)
    resources: dict[tuple, list[AclDescription]] = {}
    for b in broker.image.acls.values():
        if f.matches(b):
            resources.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
                {"Principal": b.principal, "Host": b.host, "Operation": b.operation,
                 "PermissionType": b.permission_type})
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "Resources": [
        {"ResourceType": rt, "ResourceName": name, "PatternType": pt, "Acls": acls}
        for (rt, name, pt), acls in sorted(resources.items())]}


def _error(code: ErrorCode, message: str | None) -> DescribeAclsResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "Resources": []}
