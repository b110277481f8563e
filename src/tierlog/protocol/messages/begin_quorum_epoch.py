"""BeginQuorumEpoch (key 53), versions 0-1, flexible from 1 (KIP-595).

The new leader tells the voters of its epoch. v1 (KIP-853) adds the
request's VoterId, per-partition VoterDirectoryId and LeaderEndpoints, and
the response's NodeEndpoints tag 0. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_REQUEST_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("VoterDirectoryId", "uuid", versions="1+"),
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32"),
], name="BeginQuorumEpochRequestPartitionData")

_REQUEST_TOPIC = Struct([
    Field("TopicName", "string"),
    Field("Partitions", [_REQUEST_PARTITION]),
], name="BeginQuorumEpochRequestTopicData")

_LEADER_ENDPOINT = Struct([
    Field("Name", "string", versions="1+"),
    Field("Host", "string", versions="1+"),
    Field("Port", "uint16", versions="1+"),
], name="LeaderEndpoint")

REQUEST = Struct([
    Field("ClusterId", "string", nullable="0+", default=None),
    Field("VoterId", "int32", versions="1+", default=-1),
    Field("Topics", [_REQUEST_TOPIC]),
    Field("LeaderEndpoints", [_LEADER_ENDPOINT], versions="1+"),
], name="BeginQuorumEpochRequest")

_RESPONSE_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32"),
], name="BeginQuorumEpochResponsePartitionData")

_RESPONSE_TOPIC = Struct([
    Field("TopicName", "string"),
    Field("Partitions", [_RESPONSE_PARTITION]),
], name="BeginQuorumEpochResponseTopicData")

_NODE_ENDPOINT = Struct([
    Field("NodeId", "int32", versions="1+"),
    Field("Host", "string", versions="1+"),
    Field("Port", "uint16", versions="1+"),
], name="NodeEndpoint")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("Topics", [_RESPONSE_TOPIC]),
    Field("NodeEndpoints", [_NODE_ENDPOINT], versions="1+", tag=0),
], name="BeginQuorumEpochResponse")

SPEC = ApiSpec(ApiKey.BEGIN_QUORUM_EPOCH, "BeginQuorumEpoch", 0, 1, 1, REQUEST, RESPONSE)
