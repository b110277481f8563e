"""DescribeShareGroupOffsets (90), v0: a share group's share-partition start offsets (KIP-932).

Per group, on its coordinator: GROUP_ID_NOT_FOUND for an unknown group or one of another type;
with Topics null every share-partition the group has state for (assigned to it once, or set by
AlterShareGroupOffsets), else the named partitions.  Each start offset and leader epoch is the
share coordinator's (ReadShareGroupStateSummary); a partition without state answers start
offset -1.  Unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION per partition.
v1 (KIP-1226's Lag) is not served.
ACLs: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; DESCRIBE on each topic, else
TOPIC_AUTHORIZATION_FAILED for its partitions.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext
from .share_offsets import NO_TOPIC_ID, UNINITIALIZED, read_summaries, state_topics, topic_ids, topic_of

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_share_group_offsets import (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsResponse,
        DescribeShareGroupOffsetsResponseGroup,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse:
    groups = await asyncio.gather(*(_describe(broker, header, g["GroupId"], g["Topics"]) for g in request["Groups"]))
    return {"ThrottleTimeMs": 0, "Groups": list(groups)}


async def _describe(broker: HandlerContext, header: RequestHeader, group_id: str,
                    topics: list[Any] | None) -> DescribeShareGroupOffsetsResponseGroup:
    if not authz.group(broker, header, authz.Op.DESCRIBE, group_id):
        return _error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, busy, known = state_topics(broker, group_id)
    if error or busy is None:
        return _error(group_id, error or ErrorCode.GROUP_ID_NOT_FOUND)
    if topics is None:
        names = topic_ids(broker)
        wanted = [(names[tid], sorted(ps)) for tid, (_name, ps) in sorted(known.items()) if tid in names]
    else:
        wanted = [(t["TopicName"], t["Partitions"]) for t in topics]
    answers = await asyncio.gather(*(_topic(broker, header, group_id, name, partitions, known)
                                     for name, partitions in wanted))
    return {"GroupId": group_id, "Topics": list(answers), "ErrorCode": ErrorCode.NONE, "ErrorMessage": None}


async def _topic(broker: HandlerContext, header: RequestHeader, group_id: str, name: str, partitions: list[int],
                 known: dict[bytes, tuple[str, frozenset[int]]]) -> Any:
    code, topic = topic_of(broker, header, authz.Op.DESCRIBE, name)
    if topic is None:
        return {"TopicName": name, "TopicId": NO_TOPIC_ID, "Partitions": [
            _partition(p, code, UNINITIALIZED, -1) for p in partitions]}
    with_state = known.get(topic.topic_id, (name, frozenset()))[1]
    asked = [p for p in partitions if 0 <= p < len(topic.partitions) and p in with_state]
    summaries = {p: (e, start, epoch) for p, e, start, epoch in
                 await read_summaries(broker, group_id, topic.topic_id, asked)}
    out = []
    for p in partitions:
        if not 0 <= p < len(topic.partitions):
            out.append(_partition(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNINITIALIZED, -1))
        else:
            out.append(_partition(p, *summaries.get(p, (ErrorCode.NONE, UNINITIALIZED, -1))))
    return {"TopicName": name, "TopicId": topic.topic_id, "Partitions": out}


def _partition(p: int, code: int, start: int, epoch: int) -> dict[str, Any]:
    return {"PartitionIndex": p, "StartOffset": start, "LeaderEpoch": epoch, "ErrorCode": code, "ErrorMessage": None}


def _error(group_id: str, code: int) -> DescribeShareGroupOffsetsResponseGroup:
    return {"GroupId": group_id, "Topics": [], "ErrorCode": code, "ErrorMessage": None}
