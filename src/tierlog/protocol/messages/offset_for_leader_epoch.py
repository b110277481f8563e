"""OffsetForLeaderEpoch (key 23), versions 0-4, flexible from 4.

v1 returns the LeaderEpoch; v2 CurrentLeaderEpoch and ThrottleTimeMs; v3
ReplicaId (a follower's broker id, or -1 for a consumer; default -2).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PARTITION = Struct([
    Field("Partition", "int32"),
    Field("CurrentLeaderEpoch", "int32", versions="2+", default=-1),
    Field("LeaderEpoch", "int32"),
], name="OffsetForLeaderPartition")

_TOPIC = Struct([
    Field("Topic", "string"),
    Field("Partitions", [_PARTITION]),
], name="OffsetForLeaderTopic")

REQUEST = Struct([
    Field("ReplicaId", "int32", versions="3+", default=-2),
    Field("Topics", [_TOPIC]),
], name="OffsetForLeaderEpochRequest")

_EPOCH_END_OFFSET = Struct([
    Field("ErrorCode", "int16"),
    Field("Partition", "int32"),
    Field("LeaderEpoch", "int32", versions="1+", default=-1),
    Field("EndOffset", "int64", default=-1),
], name="EpochEndOffset")

_TOPIC_RESULT = Struct([
    Field("Topic", "string"),
    Field("Partitions", [_EPOCH_END_OFFSET]),
], name="OffsetForLeaderTopicResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="2+"),
    Field("Topics", [_TOPIC_RESULT]),
], name="OffsetForLeaderEpochResponse")

SPEC = ApiSpec(ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", 0, 4, 4,
               REQUEST, RESPONSE)
