"""Fetch (key 1), versions 0-19, flexible from 12.

v1 ThrottleTimeMs; v3 MaxBytes; v4 IsolationLevel, LastStableOffset and
AbortedTransactions; v5 LogStartOffset; v7 fetch sessions (SessionId,
SessionEpoch, ForgottenTopicsData, top-level ErrorCode); v9
CurrentLeaderEpoch; v11 RackId and PreferredReadReplica; v12 LastFetchedEpoch,
request tag ClusterId 0 and response partition tags DivergingEpoch 0,
CurrentLeader 1, SnapshotId 2; v13 topic ids replace topic names; v15
ReplicaId moves into the ReplicaState tag 1; v16 (KIP-951) adds the top-level
NodeEndpoints tag 0 of the response; v17 (KIP-853) the partition's
ReplicaDirectoryId tag 0; v18 (KIP-1166) the partition's HighWatermark tag 1
(the follower's known high watermark, -1 unknown, int64 max when the sender
does not support it). The responses of v17 and v18 are the same as v16.

Version 19 is ours, from the KIP-1303 draft (local-log leader eligibility):
a follower reports its local log coverage in each FetchPartition, as the
regular (untagged) int64 fields LocalLogStartTimestamp (timestamp of the
earliest record in its local log) and LocalLogSizeBytes (total size of its
local segments), both -1 when unknown or sent by a consumer. The KIP asks
for "a new FetchRequest version" without a number; we take 19, the first
one Kafka (through 4.3, whose last is 18) has not used. The v19 response is
the same as v16. Which versions the broker accepts is decided in
broker/apis/api_01_fetch.py, not here.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["LOCAL_LOG_STATE_VERSION", "REQUEST", "RESPONSE", "SPEC"]

#: the first version whose partitions carry the KIP-1303 local-log fields
LOCAL_LOG_STATE_VERSION = 19

_HIGH_WATERMARK_UNSUPPORTED = 0x7FFFFFFFFFFFFFFF

_REPLICA_STATE = Struct([
    Field("ReplicaId", "int32", versions="15+", default=-1),
    Field("ReplicaEpoch", "int64", versions="15+", default=-1),
], name="ReplicaState")

_FETCH_PARTITION = Struct([
    Field("Partition", "int32"),
    Field("CurrentLeaderEpoch", "int32", versions="9+", default=-1),
    Field("FetchOffset", "int64"),
    Field("LastFetchedEpoch", "int32", versions="12+", default=-1),
    Field("LogStartOffset", "int64", versions="5+", default=-1),
    Field("PartitionMaxBytes", "int32"),
    Field("ReplicaDirectoryId", "uuid", versions="17+", tag=0),
    Field("HighWatermark", "int64", versions="18+", tag=1,
          default=_HIGH_WATERMARK_UNSUPPORTED),
    Field("LocalLogStartTimestamp", "int64", versions="19+", default=-1),
    Field("LocalLogSizeBytes", "int64", versions="19+", default=-1),
], name="FetchPartition")

_FETCH_TOPIC = Struct([
    Field("Topic", "string", versions="0-12"),
    Field("TopicId", "uuid", versions="13+"),
    Field("Partitions", [_FETCH_PARTITION]),
], name="FetchTopic")

_FORGOTTEN_TOPIC = Struct([
    Field("Topic", "string", versions="7-12"),
    Field("TopicId", "uuid", versions="13+"),
    Field("Partitions", ["int32"], versions="7+"),
], name="ForgottenTopic")

REQUEST = Struct([
    Field("ClusterId", "string", versions="12+", nullable="12+", tag=0, default=None),
    Field("ReplicaId", "int32", versions="0-14", default=-1),
    Field("ReplicaState", _REPLICA_STATE, versions="15+", tag=1),
    Field("MaxWaitMs", "int32"),
    Field("MinBytes", "int32"),
    Field("MaxBytes", "int32", versions="3+", default=0x7FFFFFFF),
    Field("IsolationLevel", "int8", versions="4+", default=0),
    Field("SessionId", "int32", versions="7+", default=0),
    Field("SessionEpoch", "int32", versions="7+", default=-1),
    Field("Topics", [_FETCH_TOPIC]),
    Field("ForgottenTopicsData", [_FORGOTTEN_TOPIC], versions="7+"),
    Field("RackId", "string", versions="11+", default=""),
], name="FetchRequest")

_EPOCH_END_OFFSET = Struct([
    Field("Epoch", "int32", versions="12+", default=-1),
    Field("EndOffset", "int64", versions="12+", default=-1),
], name="EpochEndOffset")

_LEADER_ID_AND_EPOCH = Struct([
    Field("LeaderId", "int32", versions="12+", default=-1),
    Field("LeaderEpoch", "int32", versions="12+", default=-1),
], name="LeaderIdAndEpoch")

_SNAPSHOT_ID = Struct([
    Field("EndOffset", "int64", default=-1),
    Field("Epoch", "int32", default=-1),
], name="SnapshotId")

_ABORTED_TRANSACTION = Struct([
    Field("ProducerId", "int64", versions="4+"),
    Field("FirstOffset", "int64", versions="4+"),
], name="AbortedTransaction")

_PARTITION_DATA = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("HighWatermark", "int64"),
    Field("LastStableOffset", "int64", versions="4+", default=-1),
    Field("LogStartOffset", "int64", versions="5+", default=-1),
    Field("DivergingEpoch", _EPOCH_END_OFFSET, versions="12+", tag=0),
    Field("CurrentLeader", _LEADER_ID_AND_EPOCH, versions="12+", tag=1),
    Field("SnapshotId", _SNAPSHOT_ID, versions="12+", tag=2),
    Field("AbortedTransactions", [_ABORTED_TRANSACTION], versions="4+", nullable="4+"),
    Field("PreferredReadReplica", "int32", versions="11+", default=-1),
    Field("Records", "records", nullable="0+"),
], name="PartitionData")

_TOPIC_RESPONSE = Struct([
    Field("Topic", "string", versions="0-12"),
    Field("TopicId", "uuid", versions="13+"),
    Field("Partitions", [_PARTITION_DATA]),
], name="FetchableTopicResponse")

_NODE_ENDPOINT = Struct([
    Field("NodeId", "int32", versions="16+"),
    Field("Host", "string", versions="16+"),
    Field("Port", "int32", versions="16+"),
    Field("Rack", "string", versions="16+", nullable="16+", default=None),
], name="NodeEndpoint")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("ErrorCode", "int16", versions="7+"),
    Field("SessionId", "int32", versions="7+", default=0),
    Field("Responses", [_TOPIC_RESPONSE]),
    Field("NodeEndpoints", [_NODE_ENDPOINT], versions="16+", tag=0),
], name="FetchResponse")

SPEC = ApiSpec(ApiKey.FETCH, "Fetch", 0, 19, 12, REQUEST, RESPONSE)
