"""ConsumerGroupDescribe (69), v0-1: consumer-protocol groups (KIP-848) with their members.

Per group: its state, group and assignment epochs, assignor, and each
member's subscription, current and target assignment (topic ids and names);
GROUP_ID_NOT_FOUND for unknown or classic groups, INVALID_GROUP_ID for "",
and the coordinator errors.  Authorized operations are not computed.
ACLs: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    view = broker.groups.topics_view(broker.image)
    return {"ThrottleTimeMs": 0, "Groups": [_describe(broker, header, view, g) for g in request["GroupIds"]]}


def _describe(broker: HandlerContext, header: RequestHeader, view: object, group_id: str) -> dict:
    if not authz.group(broker, header, authz.Op.DESCRIBE, group_id):
        return _error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return broker.groups.read(group_id, lambda shard: shard.consumer_describe(group_id, view),
                              lambda code: _error(group_id, code))


def _error(group_id: str, code: int) -> dict:
    return {"ErrorCode": code, "ErrorMessage": None, "GroupId": group_id, "GroupState": "", "GroupEpoch": -1,
            "AssignmentEpoch": -1, "AssignorName": "", "Members": []}
