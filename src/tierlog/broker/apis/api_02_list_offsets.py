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
below its minimum version gets UNSUPPORTED_VERSION.  Until tiered storage
exists nothing is uploaded: -5 answers -1 and -6 answers the log start offset,
which is KIP-1023's "nothing uploaded and log start == local log start" case.
A timestamp with no record at or after it answers offset -1.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LIST_OFFSETS, 1, 11
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
MIN_VERSION_OF_TARGET = {LATEST: 1, EARLIEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                         EARLIEST_PENDING_UPLOAD: 11}
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2
LOG_END = None              # the "isolation" of a replica's request: latest = log end offset


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    replica_id = request.get("ReplicaId", CONSUMER_REPLICA_ID)
    isolation = request.get("IsolationLevel", READ_UNCOMMITTED) if replica_id == CONSUMER_REPLICA_ID else LOG_END
    topics = []
    for t in request["Topics"]:
        parts = [_one(broker, header.api_version, replica_id, isolation, t["Name"], p) for p in t["Partitions"]]
        topics.append({"Name": t["Name"], "Partitions": parts})
    return {"ThrottleTimeMs": 0, "Topics": topics}


def _one(broker, version, replica_id, isolation, topic, p) -> dict:
    out = {"PartitionIndex": p["PartitionIndex"], "ErrorCode": ErrorCode.NONE, "Timestamp": -1, "Offset": -1,
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
            found = _lookup(part, target, isolation)
            if found is not None:
                out["Offset"], out["Timestamp"], out["LeaderEpoch"] = found
    return out


def _partition(broker, replica_id, topic, index):
    """(partition, error): the leader's replica, or with the debugging ReplicaId any local replica."""
    part, error = broker.led_partition(topic, index)
    if error == ErrorCode.NOT_LEADER_OR_FOLLOWER and part is not None and replica_id == DEBUGGING_REPLICA_ID:
        return part, ErrorCode.NONE
    return part, error


def _lookup(part, target, isolation):
    log = part.log
    epoch = log.latest_epoch if log.latest_epoch is not None else -1
    if target == LATEST:
        return _latest(part, isolation), -1, epoch
    if target in (EARLIEST, EARLIEST_PENDING_UPLOAD):
        return log.log_start_offset, -1, _epoch_at(log, log.log_start_offset)
    if target == EARLIEST_LOCAL:
        return log.local_log_start_offset, -1, _epoch_at(log, log.local_log_start_offset)
    if target == LATEST_TIERED:
        return -1, -1, -1
    if target == MAX_TIMESTAMP:
        return log.max_timestamp_offset()
    if target < 0:
        return None
    return log.offset_for_timestamp(target)


def _latest(part, isolation) -> int:
    if isolation is LOG_END:
        return part.log.log_end_offset
    return part.last_stable_offset if isolation == READ_COMMITTED else part.high_watermark


def _epoch_at(log, offset) -> int:
    if log.log_end_offset <= offset:
        return -1
    epoch = log.epoch_for_offset(offset)
    return -1 if epoch is None else epoch
