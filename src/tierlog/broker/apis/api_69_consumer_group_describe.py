"""ConsumerGroupDescribe (69), v0-1: consumer-protocol groups (KIP-848) with their members.

Per group: its state, group and assignment epochs, assignor, and each
member's subscription, current and target assignment (topic ids and names);
GROUP_ID_NOT_FOUND for unknown or classic groups, INVALID_GROUP_ID for "",
and the coordinator errors.  Authorized operations are not computed.
ACLs: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .group_describe import describe_group

if TYPE_CHECKING:
    from tierlog.protocol.typed.consumer_group_describe import (
        ConsumerGroupDescribeDescribedGroup,
        ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1


def handle(broker: HandlerContext, header: RequestHeader, request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    view = broker.groups.topics_view(broker.image)
    return {"ThrottleTimeMs": 0, "Groups": [
        describe_group(broker, header, g, lambda shard, group_id: shard.consumer_describe(group_id, view), _error)
        for g in request["GroupIds"]]}


def _error(group_id: str, code: int) -> ConsumerGroupDescribeDescribedGroup:
    return {"ErrorCode": code, "ErrorMessage": None, "GroupId": group_id, "GroupState": "", "GroupEpoch": -1,
            "AssignmentEpoch": -1, "AssignorName": "", "Members": []}
