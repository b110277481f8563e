"""OffsetForLeaderEpoch (23), v2-4: the end offset of a leader epoch, from the epoch cache.

Used by consumers to detect log truncation (KIP-320) and by followers to find
where their log diverges.  CurrentLeaderEpoch is fenced like Fetch's.
ACLs: a follower (ReplicaId >= 0) needs CLUSTER_ACTION on the cluster, a client DESCRIBE on
the topic; else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.offset_for_leader_epoch import (
        OffsetForLeaderEpochEpochEndOffset,
        OffsetForLeaderEpochRequest,
        OffsetForLeaderEpochResponse,
        OffsetForLeaderPartition,
        OffsetForLeaderTopicResult,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4


def handle(broker: HandlerContext, header: RequestHeader, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    topics: list[OffsetForLeaderTopicResult] = []
    if request.get("ReplicaId", -1) >= 0:       # a follower: CLUSTER_ACTION on the cluster
        ok = authz.cluster(broker, header, authz.Op.CLUSTER_ACTION)
        allowed = {t["Topic"] for t in request["Topics"]} if ok else set()
    else:
        allowed = authz.allowed_topics(broker, header, authz.Op.DESCRIBE, (t["Topic"] for t in request["Topics"]))
    for t in request["Topics"]:
        if t["Topic"] not in allowed:
            parts: list[OffsetForLeaderEpochEpochEndOffset] = [{"ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                                "Partition": p["Partition"],
                      "LeaderEpoch": -1, "EndOffset": -1} for p in t["Partitions"]]
        else:
            parts = [_one(broker, t["Topic"], p) for p in t["Partitions"]]
        topics.append({"Topic": t["Topic"], "Partitions": parts})
    return {"ThrottleTimeMs": 0, "Topics": topics}


def _one(broker, topic, p: OffsetForLeaderPartition) -> OffsetForLeaderEpochEpochEndOffset:
    out: OffsetForLeaderEpochEpochEndOffset = {"ErrorCode": ErrorCode.NONE, "Partition": p["Partition"], "LeaderEpoch": -1,
                                               "EndOffset": -1}
    part, out["ErrorCode"] = broker.led_partition(topic, p["Partition"])
    if part is None:
        return out
    out["ErrorCode"] = out["ErrorCode"] or part.check_epoch(p.get("CurrentLeaderEpoch", -1))
    if not out["ErrorCode"]:
        out["LeaderEpoch"], out["EndOffset"] = part.end_offset_for_epoch(p["LeaderEpoch"])
    return out
