"""BeginQuorumEpoch (key 53), versions 0-1, flexible from 1 (KIP-595).

The new leader tells the voters of its epoch. v1 (KIP-853) adds the
request's VoterId, per-partition VoterDirectoryId and LeaderEndpoints, and
the response's NodeEndpoints tag 0. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .raft_common import LEADER_ENDPOINT, NODE_ENDPOINT, epoch_response_topic

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

REQUEST = Struct([
    Field("ClusterId", "string", nullable="0+", default=None),
    Field("VoterId", "int32", versions="1+", default=-1),
    Field("Topics", [_REQUEST_TOPIC]),
    Field("LeaderEndpoints", [LEADER_ENDPOINT], versions="1+"),
], name="BeginQuorumEpochRequest")

_RESPONSE_TOPIC = epoch_response_topic("BeginQuorumEpoch")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("Topics", [_RESPONSE_TOPIC]),
    Field("NodeEndpoints", [NODE_ENDPOINT], versions="1+", tag=0),
], name="BeginQuorumEpochResponse")

SPEC = ApiSpec(ApiKey.BEGIN_QUORUM_EPOCH, "BeginQuorumEpoch", 0, 1, 1, REQUEST, RESPONSE)
