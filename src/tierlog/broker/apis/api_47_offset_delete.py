"""OffsetDelete (47), v0: delete a group's offsets of some partitions (KIP-496).

GROUP_ID_NOT_FOUND for an unknown group; a topic the group's members still
subscribe to gets GROUP_SUBSCRIBED_TO_TOPIC; a group with members whose
subscriptions cannot be read gets NON_EMPTY_GROUP.
ACLs: DELETE on the group (else GROUP_AUTHORIZATION_FAILED) and READ on each topic (else
TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.offset_delete import (
        OffsetDeleteRequest,
        OffsetDeleteResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.OFFSET_DELETE, 0, 0


async def handle(broker: HandlerContext, header: RequestHeader, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    group_id = request["GroupId"]
    if not authz.group(broker, header, authz.Op.DELETE, group_id):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED, "Topics": []}
    readable = authz.allowed_topics(broker, header, authz.Op.READ, (t["Name"] for t in request["Topics"]))
    refused = [{"Name": t["Name"], "Partitions": [
        {"PartitionIndex": p["PartitionIndex"], "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        for p in t["Partitions"]]} for t in request["Topics"] if t["Name"] not in readable]
    request = {**request, "Topics": [t for t in request["Topics"] if t["Name"] in readable]}
    resp = await broker.groups.run(
        group_id, lambda shard, token, now: shard.delete_offsets(group_id, request["Topics"], token, now),
        lambda code: {"ErrorCode": code, "Topics": []})
    return {"ThrottleTimeMs": 0, "ErrorCode": resp["ErrorCode"], "Topics": resp["Topics"] + refused}
