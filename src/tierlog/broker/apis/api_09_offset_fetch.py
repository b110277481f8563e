"""OffsetFetch (9), v0-9: a group's committed offsets (-1 when none).

v2+ Topics null = every committed offset; v8+ several groups per request, each
answered by its own coordinator partition (a group elsewhere gets
NOT_COORDINATOR).  RequireStable (v7+, KIP-447): a partition whose offset was
committed in a transaction not decided yet answers UNSTABLE_OFFSET_COMMIT.  v0-1
carry coordinator errors per partition.
ACLs: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED), DESCRIBE on each named topic
(else TOPIC_AUTHORIZATION_FAILED for its partitions); asking for all offsets leaves out
the topics the principal may not describe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.offset_fetch import (
        OffsetFetchRequest,
        OffsetFetchRequestTopics,
        OffsetFetchResponse,
        OffsetFetchResponseGroup,
        OffsetFetchResponseTopics,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.OFFSET_FETCH, 0, 9
BATCHED_FROM = 8
TOP_LEVEL_ERROR_FROM = 2


def handle(broker: HandlerContext, header: RequestHeader, request: OffsetFetchRequest) -> OffsetFetchResponse:
    if header.api_version >= BATCHED_FROM:
        stable = request.get("RequireStable", False)
        return {"ThrottleTimeMs": 0, "Groups": [_group(broker, header, g["GroupId"], g["Topics"], stable)
                                                for g in request["Groups"]]}
    topics = request["Topics"] or None
    if topics is None and header.api_version < TOP_LEVEL_ERROR_FROM:
        topics = []
    g = _group(broker, header, request["GroupId"], topics, request.get("RequireStable", False))
    if g["ErrorCode"] and header.api_version < TOP_LEVEL_ERROR_FROM:
        g["Topics"] = [{"Name": t["Name"], "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": -1, "Metadata": "", "ErrorCode": g["ErrorCode"]}
            for p in t["PartitionIndexes"]]} for t in topics or ()]
    return {"ThrottleTimeMs": 0, "Topics": g["Topics"], "ErrorCode": g["ErrorCode"]}


def _group(broker, header, group_id: str, topics: list[OffsetFetchRequestTopics] | None,
           require_stable: bool = False) -> OffsetFetchResponseGroup:
    if not authz.group(broker, header, authz.Op.DESCRIBE, group_id):
        return {"GroupId": group_id, "Topics": [], "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    names = None if topics is None else (t["Name"] for t in topics)
    answer = broker.groups.read(group_id, lambda shard: shard.fetch_offsets(group_id, topics, require_stable),
                                lambda code: {"GroupId": group_id, "Topics": [], "ErrorCode": code})
    if broker.authorizer is None:
        return answer
    if names is None:           # all of the group's offsets: only the topics the principal may describe
        describable = authz.allowed_topics(broker, header, authz.Op.DESCRIBE, (t["Name"] for t in answer["Topics"]))
        return {**answer, "Topics": [t for t in answer["Topics"] if t["Name"] in describable]}
    describable = authz.allowed_topics(broker, header, authz.Op.DESCRIBE, names)
    return {**answer, "Topics": [t if t["Name"] in describable else _refused(t) for t in answer["Topics"]]}


def _refused(topic: OffsetFetchResponseTopics) -> OffsetFetchResponseTopics:
    return {"Name": topic["Name"], "Partitions": [
        {**p, "CommittedOffset": -1, "CommittedLeaderEpoch": -1, "Metadata": "",
         "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED} for p in topic["Partitions"]]}
