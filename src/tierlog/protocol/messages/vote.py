"""Vote (key 52), versions 0-2, flexible from 0 (KIP-595 Raft election).

v1 (KIP-853) adds the request's VoterId and the per-partition
ReplicaDirectoryId / VoterDirectoryId, and the response's NodeEndpoints tag
0; v2 (KIP-996) adds the request's PreVote. Kafka renamed the candidate
fields to ReplicaEpoch / ReplicaId / ReplicaDirectoryId with v2 (the wire is
unchanged), and we use those names at every version. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .raft_common import NODE_ENDPOINT

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_REQUEST_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("ReplicaEpoch", "int32"),
    Field("ReplicaId", "int32"),
    Field("ReplicaDirectoryId", "uuid", versions="1+"),
    Field("VoterDirectoryId", "uuid", versions="1+"),
    Field("LastOffsetEpoch", "int32"),
    Field("LastOffset", "int64"),
    Field("PreVote", "bool", versions="2+", default=False),
], name="VoteRequestPartitionData")

_REQUEST_TOPIC = Struct([
    Field("TopicName", "string"),
    Field("Partitions", [_REQUEST_PARTITION]),
], name="VoteRequestTopicData")

REQUEST = Struct([
    Field("ClusterId", "string", nullable="0+", default=None),
    Field("VoterId", "int32", versions="1+", default=-1),
    Field("Topics", [_REQUEST_TOPIC]),
], name="VoteRequest")

_RESPONSE_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32"),
    Field("VoteGranted", "bool"),
], name="VoteResponsePartitionData")

_RESPONSE_TOPIC = Struct([
    Field("TopicName", "string"),
    Field("Partitions", [_RESPONSE_PARTITION]),
], name="VoteResponseTopicData")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("Topics", [_RESPONSE_TOPIC]),
    Field("NodeEndpoints", [NODE_ENDPOINT], versions="1+", tag=0),
], name="VoteResponse")

SPEC = ApiSpec(ApiKey.VOTE, "Vote", 0, 2, 0, REQUEST, RESPONSE)
