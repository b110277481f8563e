"""FetchSnapshot (key 59), versions 0-1, flexible from 0 (KIP-630).

A follower whose fetch offset fell behind the leader's log start reads a
snapshot in chunks. Request tags: ClusterId 0 (top level) and, from v1
(KIP-853), ReplicaDirectoryId 0 per partition. Response tags: CurrentLeader
0 per partition and, from v1, NodeEndpoints 0 at the top level.
UnalignedRecords is a ``records`` field (raw snapshot bytes, not aligned to
batches); it defaults to empty. CurrentLeader's fields have no default in
Kafka's spec (0), and neither have they here. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .raft_common import NODE_ENDPOINT

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_SNAPSHOT_ID = Struct([
    Field("EndOffset", "int64"),
    Field("Epoch", "int32"),
], name="SnapshotId")

_REQUEST_PARTITION = Struct([
    Field("Partition", "int32"),
    Field("CurrentLeaderEpoch", "int32"),
    Field("SnapshotId", _SNAPSHOT_ID),
    Field("Position", "int64"),
    Field("ReplicaDirectoryId", "uuid", versions="1+", tag=0),
], name="FetchSnapshotRequestPartitionSnapshot")

_REQUEST_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_REQUEST_PARTITION]),
], name="FetchSnapshotRequestTopicSnapshot")

REQUEST = Struct([
    Field("ClusterId", "string", nullable="0+", tag=0, default=None),
    Field("ReplicaId", "int32", default=-1),
    Field("MaxBytes", "int32", default=0x7FFFFFFF),
    Field("Topics", [_REQUEST_TOPIC]),
], name="FetchSnapshotRequest")

_LEADER_ID_AND_EPOCH = Struct([
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32"),
], name="LeaderIdAndEpoch")

_RESPONSE_PARTITION = Struct([
    Field("Index", "int32"),
    Field("ErrorCode", "int16"),
    Field("SnapshotId", _SNAPSHOT_ID),
    Field("CurrentLeader", _LEADER_ID_AND_EPOCH, tag=0),
    Field("Size", "int64"),
    Field("Position", "int64"),
    Field("UnalignedRecords", "records", default=b""),
], name="FetchSnapshotResponsePartitionSnapshot")

_RESPONSE_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_RESPONSE_PARTITION]),
], name="FetchSnapshotResponseTopicSnapshot")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("Topics", [_RESPONSE_TOPIC]),
    Field("NodeEndpoints", [NODE_ENDPOINT], versions="1+", tag=0),
], name="FetchSnapshotResponse")

SPEC = ApiSpec(ApiKey.FETCH_SNAPSHOT, "FetchSnapshot", 0, 1, 0, REQUEST, RESPONSE)
