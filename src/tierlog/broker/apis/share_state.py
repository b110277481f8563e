"""What the share coordinator's inter-broker APIs (83-87, KIP-932) have in common: each names
share-partitions by group, topic id and partition, asks this broker's share coordinator
(``broker.share_coordinator``) about each one, and answers per partition.

Broker-to-broker only: CLUSTER_ACTION on the cluster, else every partition answers
CLUSTER_AUTHORIZATION_FAILED (as Kafka's KafkaApis does for these APIs).
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from tierlog.group.share_state_records import SharePartitionKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

__all__ = ["answer_each"]

#: one share-partition's call: (error, the answer's extra fields or None)
Call = Callable[[SharePartitionKey, Mapping[str, Any]], Awaitable[tuple[int, Mapping[str, Any] | None]]]


async def answer_each(broker: HandlerContext, header: RequestHeader, request: Mapping[str, Any], call: Call,
                      empty: Mapping[str, Any]) -> dict[str, Any]:
    """{"Results": ...}: ``call`` for every partition of ``request`` at once; a failed partition
    answers its error with the fields of ``empty``."""
    group = request["GroupId"]
    allowed = authz.cluster(broker, header, authz.Op.CLUSTER_ACTION)
    calls = [(t["TopicId"], p) for t in request["Topics"] for p in t["Partitions"]]

    async def one(topic_id: bytes, p: Mapping[str, Any]) -> dict[str, Any]:
        error: int
        fields: Mapping[str, Any] | None
        if not allowed:
            error, fields = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
        elif not group:
            error, fields = ErrorCode.INVALID_REQUEST, None
        else:
            error, fields = await call(SharePartitionKey(group, topic_id, p["Partition"]), p)
        return {"Partition": p["Partition"], "ErrorCode": error, "ErrorMessage": None,
                **(empty if error or fields is None else fields)}
    answers = await asyncio.gather(*(one(topic_id, p) for topic_id, p in calls))
    results: dict[bytes, list[dict[str, Any]]] = {}
    for (topic_id, _), answer in zip(calls, answers, strict=True):
        results.setdefault(topic_id, []).append(answer)
    return {"Results": [{"TopicId": t, "Partitions": ps} for t, ps in results.items()]}
