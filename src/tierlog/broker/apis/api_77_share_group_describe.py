"""ShareGroupDescribe (77), v1: share groups (KIP-932) with their members.

Per group: its state, group and assignment epochs, the assignor (``simple``) and each
member's subscription and assignment (topic ids and names); GROUP_ID_NOT_FOUND for an
unknown group or one of another type, INVALID_GROUP_ID for "", and the coordinator errors.
AuthorizedOperations when asked for.  v0 (Kafka 4.0's early access) is not served.  Not in
ApiVersions until ShareFetch serves too (``apis.SHARE_APIS_ADVERTISED``).
ACLs: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.metadata.acls import ResourceType
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext
from .group_describe import describe_group

if TYPE_CHECKING:
    from tierlog.protocol.typed.share_group_describe import (
        ShareGroupDescribeDescribedGroup,
        ShareGroupDescribeRequest,
        ShareGroupDescribeResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.SHARE_GROUP_DESCRIBE, 1, 1
NOT_ASKED = -2147483648         # AuthorizedOperations when not asked for (Kafka's INT32_MIN)


def handle(broker: HandlerContext, header: RequestHeader, request: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    view = broker.groups.topics_view(broker.image)
    groups = [describe_group(broker, header, g, lambda shard, group_id: shard.share_describe(group_id, view), _error)
              for g in request["GroupIds"]]
    for g in groups:
        g["AuthorizedOperations"] = NOT_ASKED
        if request["IncludeAuthorizedOperations"] and g["ErrorCode"] == ErrorCode.NONE:
            g["AuthorizedOperations"] = authz.authorized_operations(broker, header, ResourceType.GROUP, g["GroupId"])
    return {"ThrottleTimeMs": 0, "Groups": groups}


def _error(group_id: str, code: int) -> ShareGroupDescribeDescribedGroup:
    return {"ErrorCode": code, "ErrorMessage": None, "GroupId": group_id, "GroupState": "", "GroupEpoch": -1,
            "AssignmentEpoch": -1, "AssignorName": "", "Members": [], "AuthorizedOperations": NOT_ASKED}
