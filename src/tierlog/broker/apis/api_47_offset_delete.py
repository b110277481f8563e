"""OffsetDelete (47), v0: delete a group's offsets of some partitions (KIP-496).

GROUP_ID_NOT_FOUND for an unknown group; a topic the group's members still
subscribe to gets GROUP_SUBSCRIBED_TO_TOPIC; a group with members whose
subscriptions cannot be read gets NON_EMPTY_GROUP.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.OFFSET_DELETE, 0, 0


async def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    group_id = request["GroupId"]
    resp = await broker.groups.run(
        group_id, lambda shard, token, now: shard.delete_offsets(group_id, request["Topics"], token, now),
        lambda code: {"ErrorCode": code, "Topics": []})
    return {"ThrottleTimeMs": 0, "ErrorCode": resp["ErrorCode"], "Topics": resp["Topics"]}
