"""What ShareFetch (78) and ShareAcknowledge (79) have in common (KIP-932): reading their
acknowledgements, checking the group and topics (READ on the group, else
GROUP_AUTHORIZATION_FAILED; READ on each topic, else TOPIC_AUTHORIZATION_FAILED for its
partitions; as Kafka's KafkaApis), and the per-partition answer with KIP-951's CurrentLeader
and NodeEndpoints for a partition led elsewhere.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tierlog.group.share_session import TopicPartition
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from ..leader_hint import HINTED_ERRORS, LeaderHints
from ..share_partitions import PartitionAnswer, ShareFetchResult
from . import authz
from .context import HandlerContext

__all__ = ["acknowledgements", "checked", "partitions_of", "responses"]


def partitions_of(topics: Iterable[Mapping[str, Any]], index: str = "PartitionIndex") -> list[TopicPartition]:
    return [(t["TopicId"], p[index] if isinstance(p, Mapping) else p) for t in topics for p in t["Partitions"]]


def acknowledgements(topics: Iterable[Mapping[str, Any]]) -> dict[TopicPartition, list[tuple[int, int, list[int]]]]:
    """(topic id, partition) -> its AcknowledgementBatches as (first, last, types); none: left out."""
    acks: dict[TopicPartition, list[tuple[int, int, list[int]]]] = {}
    for t in topics:
        for p in t["Partitions"]:
            batches = [(b["FirstOffset"], b["LastOffset"], list(b["AcknowledgeTypes"]))
                       for b in p.get("AcknowledgementBatches") or ()]
            if batches:
                acks.setdefault((t["TopicId"], p["PartitionIndex"]), []).extend(batches)
    return acks


def checked(broker: HandlerContext, header: RequestHeader, request: Mapping[str, Any],
            tps: Iterable[TopicPartition]) -> tuple[int, dict[TopicPartition, int]]:
    """(top-level error, the partitions refused with their error)."""
    group, member = request.get("GroupId"), request.get("MemberId")
    if not group or not member:
        return ErrorCode.INVALID_REQUEST, {}
    if not authz.group(broker, header, authz.Op.READ, group):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, {}
    if broker.authorizer is None:
        return ErrorCode.NONE, {}
    refused: dict[TopicPartition, int] = {}
    for tp in tps:
        info = broker.image.topic_by_id(tp[0])
        if info is not None and not authz.topic(broker, header, authz.Op.READ, info.name):
            refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return ErrorCode.NONE, refused


def responses(broker: HandlerContext, header: RequestHeader, result: ShareFetchResult,
              with_records: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    """(Responses, NodeEndpoints) of ``result``'s partitions, by topic."""
    hints = LeaderHints(broker, header.listener)
    topics: dict[bytes, list[dict[str, Any]]] = {}
    for (topic_id, index), answer in result.partitions.items():
        topics.setdefault(topic_id, []).append(_partition(broker, hints, topic_id, index, answer, with_records))
    return [{"TopicId": t, "Partitions": ps} for t, ps in topics.items()], hints.node_endpoints()


def _partition(broker: HandlerContext, hints: LeaderHints, topic_id: bytes, index: int, answer: PartitionAnswer,
               with_records: bool) -> dict[str, Any]:
    leader = {"LeaderId": -1, "LeaderEpoch": -1}
    info = broker.image.topic_by_id(topic_id)
    if answer.error in HINTED_ERRORS and info is not None:
        hint = hints.current_leader(info.name, index)
        leader = {"LeaderId": hint["LeaderId"], "LeaderEpoch": hint["LeaderEpoch"]}
    if not with_records:
        return {"PartitionIndex": index, "ErrorCode": answer.acknowledge_error or answer.error, "ErrorMessage": None,
                "CurrentLeader": leader}
    return {"PartitionIndex": index, "ErrorCode": answer.error, "ErrorMessage": None,
            "AcknowledgeErrorCode": answer.acknowledge_error, "AcknowledgeErrorMessage": None,
            "CurrentLeader": leader, "Records": answer.records or None,
            "AcquiredRecords": [{"FirstOffset": r.first_offset, "LastOffset": r.last_offset,
                                 "DeliveryCount": r.delivery_count} for r in answer.acquired]}
