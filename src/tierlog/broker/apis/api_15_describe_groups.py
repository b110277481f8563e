"""DescribeGroups (15), v0-5: state, protocol and members of groups.

A group this coordinator does not know is answered as Dead (Kafka's answer
before v6); member metadata and assignments are given only in Stable.
A KIP-848 consumer group is described too: protocol type "consumer", its
assignor as protocol, members' subscriptions and current assignments in the
classic consumer protocol's encoding.
Authorized operations are not computed (-2147483648).
ACLs: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .group_describe import describe_group

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_groups import (
        DescribeGroupsDescribedGroup,
        DescribeGroupsRequest,
        DescribeGroupsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_GROUPS, 0, 5


def handle(broker: HandlerContext, header: RequestHeader, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    view = broker.groups.topics_view(broker.image)
    return {"ThrottleTimeMs": 0, "Groups": [
        describe_group(broker, header, g, lambda shard, group_id: shard.describe(group_id, view), _error)
        for g in request["Groups"]]}


def _error(group_id: str, code: int) -> DescribeGroupsDescribedGroup:
    return {"ErrorCode": code, "GroupId": group_id, "GroupState": "", "ProtocolType": "", "ProtocolData": "",
            "Members": []}
