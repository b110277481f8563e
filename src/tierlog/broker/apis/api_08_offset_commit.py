"""OffsetCommit (8), v0-9: commit a group's offsets to ``__consumer_offsets``.

Partitions of topics this broker's metadata does not know, and unknown
partitions of known topics, answer UNKNOWN_TOPIC_OR_PARTITION before the group
is looked at (Kafka's KafkaApis.handleOffsetCommitRequest, every version); the
rest go to the coordinator, and a request left with none is answered without it.
A broker whose image lacks a partition first catches up with the quorum once
(``stale_metadata``), as Produce does, so a topic created a moment ago is known.
Answered once the records are committed (acks=all) or with
COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms.  Members are checked
(UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
REBALANCE_IN_PROGRESS); a group without members takes generation -1 commits
(simple consumers).  v2-4 RetentionTimeMs sets an expire timestamp.  For a
KIP-848 consumer group the generation is the member epoch (v9+; a different
one is STALE_MEMBER_EPOCH, and its members must use v9+: UNSUPPORTED_VERSION).
ACLs: READ on the group (else GROUP_AUTHORIZATION_FAILED for every partition) and READ on
each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions, the others are committed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext
from .stale_metadata import catch_up_once

if TYPE_CHECKING:
    from tierlog.protocol.typed.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestTopic,
        OffsetCommitResponse,
        OffsetCommitResponsePartition,
        OffsetCommitResponseTopic,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.OFFSET_COMMIT, 0, 9


async def handle(broker: HandlerContext, header: RequestHeader, request: OffsetCommitRequest) -> OffsetCommitResponse:
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        return {"ThrottleTimeMs": 0, "Topics": _errors(request["Topics"], ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    readable = authz.allowed_topics(broker, header, authz.Op.READ, (t["Name"] for t in request["Topics"]))
    allowed = [t for t in request["Topics"] if t["Name"] in readable]
    refused = _errors([t for t in request["Topics"] if t["Name"] not in readable], ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    known = _known(broker.image, allowed)
    if _count(known) < _count(allowed):        # a topic just created may not be in this image yet
        await catch_up_once(broker)
        known = _known(broker.image, allowed)
    answered: dict[tuple[str, int], OffsetCommitResponsePartition] = {}
    if known:
        req = {**request, "Topics": known, "version": header.api_version}
        resp = await broker.groups.run(request["GroupId"],
                                       lambda shard, token, now: shard.commit_offsets(req, token, now),
                                       lambda code: {"Topics": _errors(known, code)})
        answered = {(t["Name"], p["PartitionIndex"]): p for t in resp["Topics"] for p in t["Partitions"]}
    topics: list[OffsetCommitResponseTopic] = [
        {"Name": t["Name"], "Partitions": [
            answered.get((t["Name"], p["PartitionIndex"])) or _unknown(p["PartitionIndex"]) for p in t["Partitions"]]}
        for t in allowed]
    return {"ThrottleTimeMs": 0, "Topics": topics + refused}


def _errors(topics: list[OffsetCommitRequestTopic], code: int) -> list[OffsetCommitResponseTopic]:
    return [{"Name": t["Name"], "Partitions": [{"PartitionIndex": p["PartitionIndex"], "ErrorCode": code}
                                               for p in t["Partitions"]]} for t in topics]


def _known(image, topics: list[OffsetCommitRequestTopic]) -> list[OffsetCommitRequestTopic]:
    """The request's topics cut down to the partitions the image knows (topics left empty dropped)."""
    known: list[OffsetCommitRequestTopic] = []
    for t in topics:
        parts = [p for p in t["Partitions"] if image.partition(t["Name"], p["PartitionIndex"]) is not None]
        if parts:
            known.append({**t, "Partitions": parts})
    return known


def _count(topics: list[OffsetCommitRequestTopic]) -> int:
    return sum(len(t["Partitions"]) for t in topics)


def _unknown(index: int) -> OffsetCommitResponsePartition:
    return {"PartitionIndex": index, "ErrorCode": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
