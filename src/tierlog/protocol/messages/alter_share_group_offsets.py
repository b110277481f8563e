"""AlterShareGroupOffsets (key 91), version 0, flexible (KIP-932): set the start offsets of an empty
share group's share-partitions.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .share_group_offsets import partition_result, topic_results

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("Topics", [Struct([
        Field("TopicName", "string"),
        Field("Partitions", [Struct([
            Field("PartitionIndex", "int32"),
            Field("StartOffset", "int64"),
        ], name="AlterShareGroupOffsetsRequestPartition")]),
    ], name="AlterShareGroupOffsetsRequestTopic")]),
], name="AlterShareGroupOffsetsRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("Responses", [topic_results("AlterShareGroupOffsetsResponseTopic",
                                       partition_result("AlterShareGroupOffsetsResponsePartition", []))]),
], name="AlterShareGroupOffsetsResponse")

SPEC = ApiSpec(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "AlterShareGroupOffsets", 0, 0, 0, REQUEST, RESPONSE)
