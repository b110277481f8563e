"""EndQuorumEpoch (key 54), versions 0-1, flexible from 1 (KIP-595).

A resigning leader tells the voters to start an election. v1 (KIP-853)
replaces PreferredSuccessors (v0 only) with PreferredCandidates (id and
directory id), adds LeaderEndpoints to the request and NodeEndpoints tag 0 to
the response. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .raft_common import LEADER_ENDPOINT, NODE_ENDPOINT, epoch_response_topic

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_REPLICA_INFO = Struct([
    Field("CandidateId", "int32", versions="1+"),
    Field("CandidateDirectoryId", "uuid", versions="1+"),
], name="ReplicaInfo")

_REQUEST_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32"),
    Field("PreferredSuccessors", ["int32"], versions="0"),
    Field("PreferredCandidates", [_REPLICA_INFO], versions="1+"),
], name="EndQuorumEpochRequestPartitionData")

_REQUEST_TOPIC = Struct([
    Field("TopicName", "string"),
    Field("Partitions", [_REQUEST_PARTITION]),
], name="EndQuorumEpochRequestTopicData")

REQUEST = Struct([
    Field("ClusterId", "string", nullable="0+", default=None),
    Field("Topics", [_REQUEST_TOPIC]),
    Field("LeaderEndpoints", [LEADER_ENDPOINT], versions="1+"),
], name="EndQuorumEpochRequest")

_RESPONSE_TOPIC = epoch_response_topic("EndQuorumEpoch")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("Topics", [_RESPONSE_TOPIC]),
    Field("NodeEndpoints", [NODE_ENDPOINT], versions="1+", tag=0),
], name="EndQuorumEpochResponse")

SPEC = ApiSpec(ApiKey.END_QUORUM_EPOCH, "EndQuorumEpoch", 0, 1, 1, REQUEST, RESPONSE)
