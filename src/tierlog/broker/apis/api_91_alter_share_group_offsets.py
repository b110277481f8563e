"""AlterShareGroupOffsets (91), v0: set the start offsets of an empty share group's
share-partitions (KIP-932; ``kafka-share-groups.sh --reset-offsets``).

On the group's coordinator: GROUP_ID_NOT_FOUND (top level) when a classic or consumer group has
the id, NON_EMPTY_GROUP while the share group has members; a group that does not exist yet is
created (empty), as Kafka does.  Each partition's share state starts again at its offset at the
next state epoch (the share coordinator's InitializeShareGroupState; what a partition leader
still holds of the older epoch is fenced at its next write), and the group records that the
partition has state.  Unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION, a negative
offset INVALID_REQUEST, per partition.
ACLs: READ on the group, else GROUP_AUTHORIZATION_FAILED; READ on each topic, else
TOPIC_AUTHORIZATION_FAILED for its partitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tierlog.group import with_error
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext
from .share_offsets import NO_TOPIC_ID, partition_results, reset_states, state_topics, topic_of

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_share_group_offsets import (
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse:
    group_id = request["GroupId"]
    error: int = ErrorCode.NONE
    if not authz.group(broker, header, authz.Op.READ, group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        error, busy, _known = state_topics(broker, group_id)
        error = error or (ErrorCode.NON_EMPTY_GROUP if busy else ErrorCode.NONE)
    if error:
        return _refused(request, error)
    responses, altered = [], []
    for t in request["Topics"]:
        answer, done = await _topic(broker, header, group_id, t)
        responses.append(answer)
        if done is not None:
            altered.append(done)
    answer = {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "Responses": responses}
    resp = await broker.groups.run(
        group_id, lambda shard, token, now: shard.share_offsets_altered(group_id, altered, answer, token, now),
        lambda code: with_error(answer, code))
    return {**resp, "ThrottleTimeMs": 0}


async def _topic(broker: HandlerContext, header: RequestHeader, group_id: str,
                 t: Any) -> tuple[Any, tuple[bytes, str, frozenset[int]] | None]:
    name, asked = t["TopicName"], {p["PartitionIndex"]: p["StartOffset"] for p in t["Partitions"]}
    code, topic = topic_of(broker, header, authz.Op.READ, name)
    if topic is None:
        return {"TopicName": name, "TopicId": NO_TOPIC_ID, "Partitions": partition_results(
            dict.fromkeys(asked, code))}, None
    errors: dict[int, int] = {p: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for p in asked if not 0 <= p < len(topic.partitions)}
    errors |= {p: ErrorCode.INVALID_REQUEST for p, offset in asked.items() if offset < 0 and p not in errors}
    errors |= await reset_states(broker, group_id, topic.topic_id,
                                 {p: offset for p, offset in asked.items() if p not in errors})
    done = frozenset(p for p, e in errors.items() if not e)
    return ({"TopicName": name, "TopicId": topic.topic_id, "Partitions": partition_results(errors)},
            (topic.topic_id, name, done) if done else None)


def _refused(request: AlterShareGroupOffsetsRequest, code: int) -> AlterShareGroupOffsetsResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": None, "Responses": [
        {"TopicName": t["TopicName"], "TopicId": NO_TOPIC_ID,
         "Partitions": partition_results({p["PartitionIndex"]: code for p in t["Partitions"]})}
        for t in request["Topics"]]}
