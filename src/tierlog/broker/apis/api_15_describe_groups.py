"""DescribeGroups (15), v0-5: state, protocol and members of groups.

A group this coordinator does not know is answered as Dead (Kafka's answer
before v6); member metadata and assignments are given only in Stable.
A KIP-848 consumer group is described too: protocol type "consumer", its
assignor as protocol, members' subscriptions and current assignments in the
classic consumer protocol's encoding.
Authorized operations are not computed (-2147483648).
ACLs: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_GROUPS, 0, 5


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    view = broker.groups.topics_view(broker.image)
    return {"ThrottleTimeMs": 0, "Groups": [
        broker.groups.read(g, lambda shard, g=g: shard.describe(g, view), lambda code, g=g: _error(g, code))
        if authz.group(broker, header, authz.Op.DESCRIBE, g) else _error(g, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        for g in request["Groups"]]}


def _error(group_id: str, code: int) -> dict:
    return {"ErrorCode": code, "GroupId": group_id, "GroupState": "", "ProtocolType": "", "ProtocolData": "",
            "Members": []}
