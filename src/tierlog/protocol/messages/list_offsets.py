"""ListOffsets (key 2), versions 0-11, flexible from 6.

v0 answers a list of OldStyleOffsets (at most MaxNumOffsets); v1 a single
Timestamp/Offset; v2 IsolationLevel and ThrottleTimeMs; v4 leader epochs; v7-9
and v11 only add special timestamps (-3 max timestamp, -4 local log start, -5
latest tiered, -6 earliest pending upload, KIP-1023); v10 TimeoutMs.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("CurrentLeaderEpoch", "int32", versions="4+", default=-1),
    Field("Timestamp", "int64"),
    Field("MaxNumOffsets", "int32", versions="0", default=1),
], name="ListOffsetsPartition")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="ListOffsetsTopic")

REQUEST = Struct([
    Field("ReplicaId", "int32"),
    Field("IsolationLevel", "int8", versions="2+"),
    Field("Topics", [_TOPIC]),
    Field("TimeoutMs", "int32", versions="10+"),
], name="ListOffsetsRequest")

_PARTITION_RESPONSE = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("OldStyleOffsets", ["int64"], versions="0"),
    Field("Timestamp", "int64", versions="1+", default=-1),
    Field("Offset", "int64", versions="1+", default=-1),
    Field("LeaderEpoch", "int32", versions="4+", default=-1),
], name="ListOffsetsPartitionResponse")

_TOPIC_RESPONSE = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION_RESPONSE]),
], name="ListOffsetsTopicResponse")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="2+"),
    Field("Topics", [_TOPIC_RESPONSE]),
], name="ListOffsetsResponse")

SPEC = ApiSpec(ApiKey.LIST_OFFSETS, "ListOffsets", 0, 11, 6, REQUEST, RESPONSE)
