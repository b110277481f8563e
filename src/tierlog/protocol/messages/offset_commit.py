"""OffsetCommit (key 8), versions 0-9, flexible from 8.

v1 GenerationIdOrMemberEpoch, MemberId and a per-partition CommitTimestamp
(v1 only); v2-4 RetentionTimeMs; v3 ThrottleTimeMs; v6 CommittedLeaderEpoch;
v7 GroupInstanceId; v9 member epochs of the new consumer protocol.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("CommittedOffset", "int64"),
    Field("CommittedLeaderEpoch", "int32", versions="6+", default=-1),
    Field("CommitTimestamp", "int64", versions="1", default=-1),
    Field("CommittedMetadata", "string", nullable="0+"),
], name="OffsetCommitRequestPartition")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="OffsetCommitRequestTopic")

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("GenerationIdOrMemberEpoch", "int32", versions="1+", default=-1),
    Field("MemberId", "string", versions="1+"),
    Field("GroupInstanceId", "string", versions="7+", nullable="7+", default=None),
    Field("RetentionTimeMs", "int64", versions="2-4", default=-1),
    Field("Topics", [_TOPIC]),
], name="OffsetCommitRequest")

_PARTITION_RESPONSE = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
], name="OffsetCommitResponsePartition")

_TOPIC_RESPONSE = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION_RESPONSE]),
], name="OffsetCommitResponseTopic")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="3+"),
    Field("Topics", [_TOPIC_RESPONSE]),
], name="OffsetCommitResponse")

SPEC = ApiSpec(ApiKey.OFFSET_COMMIT, "OffsetCommit", 0, 9, 8, REQUEST, RESPONSE)
