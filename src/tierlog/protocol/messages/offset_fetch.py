"""OffsetFetch (key 9), versions 0-9, flexible from 6.

v2 nullable Topics (null = all) and a top-level ErrorCode; v3 ThrottleTimeMs;
v5 CommittedLeaderEpoch; v7 RequireStable; v8 batches groups (Groups in and
out replace the single-group fields); v9 MemberId and MemberEpoch.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC = Struct([
    Field("Name", "string", versions="0-7"),
    Field("PartitionIndexes", ["int32"], versions="0-7"),
], name="OffsetFetchRequestTopic")

_GROUP_TOPIC = Struct([
    Field("Name", "string", versions="8+"),
    Field("PartitionIndexes", ["int32"], versions="8+"),
], name="OffsetFetchRequestTopics")

_GROUP = Struct([
    Field("GroupId", "string", versions="8+"),
    Field("MemberId", "string", versions="9+", nullable="9+", default=None),
    Field("MemberEpoch", "int32", versions="9+", default=-1),
    Field("Topics", [_GROUP_TOPIC], versions="8+", nullable="8+"),
], name="OffsetFetchRequestGroup")

REQUEST = Struct([
    Field("GroupId", "string", versions="0-7"),
    Field("Topics", [_TOPIC], versions="0-7", nullable="2-7"),
    Field("Groups", [_GROUP], versions="8+"),
    Field("RequireStable", "bool", versions="7+", default=False),
], name="OffsetFetchRequest")

_PARTITION_RESPONSE = Struct([
    Field("PartitionIndex", "int32", versions="0-7"),
    Field("CommittedOffset", "int64", versions="0-7"),
    Field("CommittedLeaderEpoch", "int32", versions="5-7", default=-1),
    Field("Metadata", "string", versions="0-7", nullable="0-7"),
    Field("ErrorCode", "int16", versions="0-7"),
], name="OffsetFetchResponsePartition")

_TOPIC_RESPONSE = Struct([
    Field("Name", "string", versions="0-7"),
    Field("Partitions", [_PARTITION_RESPONSE], versions="0-7"),
], name="OffsetFetchResponseTopic")

_GROUP_PARTITION = Struct([
    Field("PartitionIndex", "int32", versions="8+"),
    Field("CommittedOffset", "int64", versions="8+"),
    Field("CommittedLeaderEpoch", "int32", versions="8+", default=-1),
    Field("Metadata", "string", versions="8+", nullable="8+"),
    Field("ErrorCode", "int16", versions="8+"),
], name="OffsetFetchResponsePartitions")

_GROUP_TOPIC_RESPONSE = Struct([
    Field("Name", "string", versions="8+"),
    Field("Partitions", [_GROUP_PARTITION], versions="8+"),
], name="OffsetFetchResponseTopics")

_GROUP_RESPONSE = Struct([
    Field("GroupId", "string", versions="8+"),
    Field("Topics", [_GROUP_TOPIC_RESPONSE], versions="8+"),
    Field("ErrorCode", "int16", versions="8+", default=0),
], name="OffsetFetchResponseGroup")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="3+"),
    Field("Topics", [_TOPIC_RESPONSE], versions="0-7"),
    Field("ErrorCode", "int16", versions="2-7", default=0),
    Field("Groups", [_GROUP_RESPONSE], versions="8+"),
], name="OffsetFetchResponse")

SPEC = ApiSpec(ApiKey.OFFSET_FETCH, "OffsetFetch", 0, 9, 6, REQUEST, RESPONSE)
