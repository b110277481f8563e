"""DeleteRecords (21), v0-2: raise partitions' log start offsets, on their leaders.

Per partition (Kafka's ReplicaManager.deleteRecords): this broker must lead it
(NOT_LEADER_OR_FOLLOWER, or UNKNOWN_TOPIC_OR_PARTITION for a partition the
image does not have); the topic's cleanup.policy must include delete
(POLICY_VIOLATION); the offset must lie in [0, high watermark], -1 meaning the
high watermark (OFFSET_OUT_OF_RANGE).  The leader raises its log start offset
at once (``ReplicaManager.delete_records``); segments wholly below it go with
the next retention pass, local and remote (tiered storage expires remote
segments below the log start).  ListOffsets -2 answers the new log start and a
consumer fetching below it gets OFFSET_OUT_OF_RANGE.

The answer waits (Kafka's DelayedDeleteRecords, ``replication.delete_records``)
until the low watermark, the smallest log start over the ISR, reaches the
offset -- followers take the leader's LogStartOffset from Fetch responses and
report theirs in the next Fetch -- or TimeoutMs passes (REQUEST_TIMED_OUT).
LowWatermark is that low watermark (-1 with an error).  Nothing is left out.
ACLs: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.delete_records import (
        DeleteRecordsPartition,
        DeleteRecordsPartitionResult,
        DeleteRecordsRequest,
        DeleteRecordsResponse,
        DeleteRecordsTopicResult,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DELETE_RECORDS, 0, 2


async def handle(broker: HandlerContext, header: RequestHeader, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    timeout_ms = request.get("TimeoutMs", 0)
    topics: list[DeleteRecordsTopicResult] = []
    waits: list[tuple[DeleteRecordsPartitionResult, asyncio.Future]] = []
    deletable = authz.allowed_topics(broker, header, authz.Op.DELETE, (t["Name"] for t in request["Topics"]))
    for t in request["Topics"]:
        parts: list[DeleteRecordsPartitionResult] = []
        for p in t["Partitions"]:
            out: DeleteRecordsPartitionResult = {"PartitionIndex": p["PartitionIndex"], "LowWatermark": -1,
                                                 "ErrorCode": ErrorCode.NONE}
            if t["Name"] not in deletable:
                out["ErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                parts.append(out)
                continue
            fut = _start(broker, t["Name"], p, timeout_ms, out)
            if fut is not None:
                waits.append((out, fut))
            parts.append(out)
        topics.append({"Name": t["Name"], "Partitions": parts})
    if waits:
        await asyncio.gather(*(f for _, f in waits))
        for out, fut in waits:
            out["ErrorCode"], out["LowWatermark"] = fut.result()
    return {"ThrottleTimeMs": 0, "Topics": topics}


def _start(broker, topic: str, p: DeleteRecordsPartition, timeout_ms: int, out: DeleteRecordsPartitionResult):
    """Raise the log start; the future to wait on while the ISR catches up (None: answered)."""
    part, error = broker.led_partition(topic, p["PartitionIndex"])
    if error:
        out["ErrorCode"] = error
        return None
    error, low_watermark, fut = broker.replicas.delete_records(part, p["Offset"], timeout_ms)
    out["ErrorCode"], out["LowWatermark"] = error, low_watermark
    return fut
