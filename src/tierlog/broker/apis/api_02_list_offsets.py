"""ListOffsets (2), v1-11: offsets by timestamp and by Kafka's special targets.

Who asks (ReplicaId) decides what "latest" means, as in Kafka's KafkaApis /
Partition.fetchOffsetForTimestamp:

- a consumer (ReplicaId -1): the high watermark, or the last stable offset
  for READ_COMMITTED; served by the leader only;
- a replica (ReplicaId >= 0, a follower resolving OFFSET_OUT_OF_RANGE): the
  log end offset, IsolationLevel ignored; served by the leader only;
- the debugging replica (ReplicaId -2): the log end offset, and any replica
  (leader or follower) answers from its own log.

Any other ReplicaId counts as a replica, as in Kafka.  Targets: -1 latest (above),
-2 earliest (log start), -3 max timestamp (v7+), -4 earliest local (v8+),
-5 latest tiered (v9+), -6 earliest pending upload (v11+, KIP-1023); a target
below its minimum version gets UNSUPPORTED_VERSION.  -2/-4/-5/-6 follow
``tiered.read_rules`` (KIP-405; -6 by Kafka 4.3's rules: -1 unless the topic is
tiered).  On a tiered log a timestamp is looked up in remote storage first
(``broker.remote.reader``, through the remote segments' batches), then locally;
until the partition's remote log metadata is caught up, -5, -6 and timestamp
lookups of a tiered log answer REPLICA_NOT_AVAILABLE (retriable).
A timestamp with no record at or after it answers offset -1.  A consumer never
gets an offset at or past its last fetchable one (the high watermark): such a
lookup answers -1, or OFFSET_NOT_AVAILABLE (retriable), as latest does, while a
new leader's high watermark has not reached the start of its epoch yet.
ACLs: DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader
from tierlog.tiered import RemoteStorageError, TopicIdPartition

from ..partition import FetchIsolation
from ..partition.offsets import (
    EARLIEST,
    EARLIEST_LOCAL,
    EARLIEST_PENDING_UPLOAD,
    LATEST,
    LATEST_TIERED,
    MAX_TIMESTAMP,
    fetch_offset_for_timestamp,
)
from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.list_offsets import (
        ListOffsetsPartition,
        ListOffsetsPartitionResponse,
        ListOffsetsRequest,
        ListOffsetsResponse,
        ListOffsetsTopicResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LIST_OFFSETS, 1, 11
MIN_VERSION_OF_TARGET = {LATEST: 1, EARLIEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                         EARLIEST_PENDING_UPLOAD: 11}
READ_UNCOMMITTED = 0
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2


async def handle(broker: HandlerContext, header: RequestHeader, request: ListOffsetsRequest) -> ListOffsetsResponse:
    replica_id = request.get("ReplicaId", CONSUMER_REPLICA_ID)
    # any ReplicaId but the consumer's is a replica's (the debugging one too): latest is the log end
    isolation = FetchIsolation.of(-1, request.get("IsolationLevel", READ_UNCOMMITTED)) \
        if replica_id == CONSUMER_REPLICA_ID else FetchIsolation.LOG_END
    topics: list[ListOffsetsTopicResponse] = []
    describable = authz.allowed_topics(broker, header, authz.Op.DESCRIBE, (t["Name"] for t in request["Topics"]))
    for t in request["Topics"]:
        if t["Name"] not in describable:
            parts: list[ListOffsetsPartitionResponse] = [{"PartitionIndex": p["PartitionIndex"],
                                                          "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                      "Timestamp": -1, "Offset": -1, "LeaderEpoch": -1} for p in t["Partitions"]]
        else:
            parts = [await _one(broker, header.api_version, replica_id, isolation, t["Name"], p)
                     for p in t["Partitions"]]
        topics.append({"Name": t["Name"], "Partitions": parts})
    return {"ThrottleTimeMs": 0, "Topics": topics}


async def _one(broker, version, replica_id, isolation, topic,
               p: ListOffsetsPartition) -> ListOffsetsPartitionResponse:
    out: ListOffsetsPartitionResponse = {"PartitionIndex": p["PartitionIndex"], "ErrorCode": ErrorCode.NONE, "Timestamp": -1,
                                         "Offset": -1,
           "LeaderEpoch": -1}
    target = p["Timestamp"]
    part, error = _partition(broker, replica_id, topic, p["PartitionIndex"])
    if target < 0 and version < MIN_VERSION_OF_TARGET.get(target, 10**6):
        out["ErrorCode"] = ErrorCode.UNSUPPORTED_VERSION
    elif error:
        out["ErrorCode"] = error
    else:
        out["ErrorCode"] = part.check_epoch(p.get("CurrentLeaderEpoch", -1))
        if not out["ErrorCode"]:
            tiered = broker.remote is not None and part.tiered
            if tiered and not _metadata_ready(broker, part) and target not in (LATEST, EARLIEST, EARLIEST_LOCAL,
                                                                                 MAX_TIMESTAMP):
                out["ErrorCode"] = ErrorCode.REPLICA_NOT_AVAILABLE
                return out
            found = await _remote_lookup(broker, part, target) if tiered else None
            out["ErrorCode"], found = fetch_offset_for_timestamp(part, target, isolation, found)
            if found is not None:
                out["Offset"], out["Timestamp"], out["LeaderEpoch"] = found
    return out


def _partition(broker, replica_id, topic, index):
    """(partition, error): the leader's replica, or with the debugging ReplicaId any local replica."""
    part, error = broker.led_partition(topic, index)
    if error == ErrorCode.NOT_LEADER_OR_FOLLOWER and part is not None and replica_id == DEBUGGING_REPLICA_ID:
        return part, ErrorCode.NONE
    return part, error


def _metadata_ready(broker, part) -> bool:
    return broker.remote.metadata.is_ready(TopicIdPartition(part.topic_id, part.topic, part.index))


async def _remote_lookup(broker, part, target):
    """A timestamp below the local log start: the first remote record at or after it, else None."""
    if target < 0 or part.local_log_start_offset <= part.log_start_offset:
        return None
    try:
        found = await broker.remote.reader.offset_for_timestamp(part, target)
    except (TimeoutError, RemoteStorageError):
        return None
    if found is None:
        return None
    offset, timestamp, epoch = found
    return offset, timestamp, epoch
