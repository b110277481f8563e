"""DeleteShareGroupOffsets (92), v0: forget an empty share group's state of whole topics (KIP-932).

On the group's coordinator: GROUP_ID_NOT_FOUND (top level) for an unknown group or one of another
type, NON_EMPTY_GROUP while it has members.  Per topic: the share coordinator's state of each of
its partitions the group has state for is deleted (DeleteShareGroupState), then the group forgets
the topic; a member that reads it later starts at ``share.auto.offset.reset``.  An unknown topic
is UNKNOWN_TOPIC_OR_PARTITION.
ACLs: DELETE on the group, else GROUP_AUTHORIZATION_FAILED; READ on each topic, else
TOPIC_AUTHORIZATION_FAILED for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tierlog.group import with_error
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext
from .share_offsets import NO_TOPIC_ID, delete_states, state_topics, topic_of

if TYPE_CHECKING:
    from tierlog.protocol.typed.delete_share_group_offsets import (
        DeleteShareGroupOffsetsRequest,
        DeleteShareGroupOffsetsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse:
    group_id = request["GroupId"]
    if not authz.group(broker, header, authz.Op.DELETE, group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, busy, known = state_topics(broker, group_id)
    if error or busy is None:
        return _refused(error or ErrorCode.GROUP_ID_NOT_FOUND)
    if busy:
        return _refused(ErrorCode.NON_EMPTY_GROUP)
    responses, deleted = [], []
    for t in request["Topics"]:
        answer = await _topic(broker, header, group_id, t["TopicName"], known)
        responses.append(answer)
        if not answer["ErrorCode"] and answer["TopicId"] != NO_TOPIC_ID:
            deleted.append(answer["TopicId"])
    answer = {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "Responses": responses}
    resp = await broker.groups.run(
        group_id, lambda shard, token, now: shard.share_offsets_deleted(group_id, deleted, answer, token, now),
        lambda code: with_error(answer, code))
    return {**resp, "ThrottleTimeMs": 0}


async def _topic(broker: HandlerContext, header: RequestHeader, group_id: str, name: str,
                 known: dict[bytes, tuple[str, frozenset[int]]]) -> Any:
    code, topic = topic_of(broker, header, authz.Op.READ, name)
    if topic is None:
        return {"TopicName": name, "TopicId": NO_TOPIC_ID, "ErrorCode": code, "ErrorMessage": None}
    partitions = known.get(topic.topic_id, (name, frozenset()))[1]
    errors = await delete_states(broker, group_id, topic.topic_id, partitions)
    failed = next((e for _p, e in sorted(errors.items()) if e), ErrorCode.NONE)
    return {"TopicName": name, "TopicId": topic.topic_id, "ErrorCode": failed, "ErrorMessage": None}


def _refused(code: int) -> DeleteShareGroupOffsetsResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": None, "Responses": []}
