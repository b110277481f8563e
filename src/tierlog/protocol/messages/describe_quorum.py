"""DescribeQuorum (key 55), versions 0-2, flexible from 0 (KIP-595).

The request is the same at every version. v1 (KIP-836) adds each replica's
LastFetchTimestamp and LastCaughtUpTimestamp (-1 when unknown); v2 (KIP-853)
adds the top-level and per-partition ErrorMessage, each replica's
ReplicaDirectoryId and the Nodes list with their listeners. Nothing is left
out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_REQUEST_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
], name="DescribeQuorumRequestPartitionData")

_REQUEST_TOPIC = Struct([
    Field("TopicName", "string"),
    Field("Partitions", [_REQUEST_PARTITION]),
], name="DescribeQuorumRequestTopicData")

REQUEST = Struct([
    Field("Topics", [_REQUEST_TOPIC]),
], name="DescribeQuorumRequest")

_REPLICA_STATE = Struct([
    Field("ReplicaId", "int32"),
    Field("ReplicaDirectoryId", "uuid", versions="2+"),
    Field("LogEndOffset", "int64"),
    Field("LastFetchTimestamp", "int64", versions="1+", default=-1),
    Field("LastCaughtUpTimestamp", "int64", versions="1+", default=-1),
], name="ReplicaState")

_RESPONSE_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", versions="2+", nullable="2+", default=None),
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32"),
    Field("HighWatermark", "int64"),
    Field("CurrentVoters", [_REPLICA_STATE]),
    Field("Observers", [_REPLICA_STATE]),
], name="DescribeQuorumResponsePartitionData")

_RESPONSE_TOPIC = Struct([
    Field("TopicName", "string"),
    Field("Partitions", [_RESPONSE_PARTITION]),
], name="DescribeQuorumResponseTopicData")

_LISTENER = Struct([
    Field("Name", "string", versions="2+"),
    Field("Host", "string", versions="2+"),
    Field("Port", "uint16", versions="2+"),
], name="Listener")

_NODE = Struct([
    Field("NodeId", "int32", versions="2+"),
    Field("Listeners", [_LISTENER], versions="2+"),
], name="Node")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", versions="2+", nullable="2+", default=None),
    Field("Topics", [_RESPONSE_TOPIC]),
    Field("Nodes", [_NODE], versions="2+"),
], name="DescribeQuorumResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_QUORUM, "DescribeQuorum", 0, 2, 0, REQUEST, RESPONSE)
