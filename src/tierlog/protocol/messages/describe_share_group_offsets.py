"""DescribeShareGroupOffsets (key 90), version 0, flexible (KIP-932): a share group's share-partition
start offsets and leader epochs, for all its topics (Topics null) or the ones named.
v1 (KIP-1226's Lag) is not served.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .share_group_offsets import partition_result, topic_results

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("Groups", [Struct([
        Field("GroupId", "string"),
        Field("Topics", [Struct([
            Field("TopicName", "string"),
            Field("Partitions", ["int32"]),
        ], name="DescribeShareGroupOffsetsRequestTopic")], nullable="0+"),
    ], name="DescribeShareGroupOffsetsRequestGroup")]),
], name="DescribeShareGroupOffsetsRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Groups", [Struct([
        Field("GroupId", "string"),
        Field("Topics", [topic_results("DescribeShareGroupOffsetsResponseTopic", partition_result(
            "DescribeShareGroupOffsetsResponsePartition",
            [Field("StartOffset", "int64"), Field("LeaderEpoch", "int32")]))]),
        Field("ErrorCode", "int16"),
        Field("ErrorMessage", "string", nullable="0+", default=None),
    ], name="DescribeShareGroupOffsetsResponseGroup")]),
], name="DescribeShareGroupOffsetsResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsets", 0, 0, 0, REQUEST, RESPONSE)
