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
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader
from tierlog.tiered import RemoteStorageError, TopicIdPartition
from tierlog.tiered.read_rules import TieredLogState, list_offsets_answer

from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LIST_OFFSETS, 1, 11
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
MIN_VERSION_OF_TARGET = {LATEST: 1, EARLIEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                         EARLIEST_PENDING_UPLOAD: 11}
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2
LOG_END = None              # the "isolation" of a replica's request: latest = log end offset


async def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    replica_id = request.get("ReplicaId", CONSUMER_REPLICA_ID)
    isolation = request.get("IsolationLevel", READ_UNCOMMITTED) if replica_id == CONSUMER_REPLICA_ID else LOG_END
    topics = []
    for t in request["Topics"]:
        parts = [await _one(broker, header.api_version, replica_id, isolation, t["Name"], p)
                 for p in t["Partitions"]]
        topics.append({"Name": t["Name"], "Partitions": parts})
    return {"ThrottleTimeMs": 0, "Topics": topics}


async def _one(broker, version, replica_id, isolation, topic, p) -> dict:
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
            tiered = broker.remote is not None and part.log.config.remote_storage_enable
            if tiered and not _metadata_ready(broker, part) and target not in (LATEST, EARLIEST, EARLIEST_LOCAL,
                                                                                 MAX_TIMESTAMP):
                out["ErrorCode"] = ErrorCode.REPLICA_NOT_AVAILABLE
                return out
            found = await _remote_lookup(broker, part, target) if tiered else None
            out["ErrorCode"], found = _fetchable(part, isolation, target, found or _lookup(part, target, isolation))
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
    if target in (EARLIEST, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        state = TieredLogState(log.config.remote_storage_enable, log.log_start_offset, log.local_log_start_offset,
                               log.log_end_offset, log.highest_offset_in_remote_storage, tuple(log.epoch_entries()))
        answer = list_offsets_answer(state, target)
        return answer.offset, -1, answer.leader_epoch
    if target == MAX_TIMESTAMP:
        return log.max_timestamp_offset()
    if target < 0:
        return None
    return log.offset_for_timestamp(target)


def _fetchable(part, isolation, target, found) -> tuple[int, tuple | None]:
    """(error, found) as a consumer may see it (Kafka's Partition.fetchOffsetForTimestamp and
    ReplicaManager.fetchOffset): no offset at or past its last fetchable one (-1 instead), and
    OFFSET_NOT_AVAILABLE for such a lookup, or for latest, while a new leader's high watermark is
    still below the start of its epoch.  Earliest targets and replicas' requests are not capped."""
    if isolation is LOG_END or target in (EARLIEST, EARLIEST_LOCAL):
        return ErrorCode.NONE, found
    leader = part.leader_state
    lagging = leader is not None and leader.epoch_start_offset > part.high_watermark
    if target == LATEST:
        return (ErrorCode.OFFSET_NOT_AVAILABLE, None) if lagging else (ErrorCode.NONE, found)
    if found is not None and found[0] < _latest(part, isolation):
        return ErrorCode.NONE, found            # offset -1 answers (nothing tiered yet) included
    return (ErrorCode.OFFSET_NOT_AVAILABLE if lagging else ErrorCode.NONE), None


def _metadata_ready(broker, part) -> bool:
    return broker.remote.metadata.is_ready(TopicIdPartition(part.topic_id, part.topic, part.index))


async def _remote_lookup(broker, part, target):
    """A timestamp below the local log start: the first remote record at or after it, else None."""
    log = part.log
    if target < 0 or log.local_log_start_offset <= log.log_start_offset:
        return None
    try:
        found = await broker.remote.reader.offset_for_timestamp(part, target)
    except (TimeoutError, RemoteStorageError):
        return None
    if found is None:
        return None
    offset, timestamp, epoch = found
    return offset, timestamp, epoch


def _latest(part, isolation) -> int:
    if isolation is LOG_END:
        return part.log.log_end_offset
    return part.last_stable_offset if isolation == READ_COMMITTED else part.high_watermark


def _epoch_at(log, offset) -> int:
    if log.log_end_offset <= offset:
        return -1
    epoch = log.epoch_for_offset(offset)
    return -1 if epoch is None else epoch
