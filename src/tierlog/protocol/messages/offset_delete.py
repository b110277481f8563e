"""OffsetDelete (key 47), version 0 only, never flexible (KIP-496)."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PARTITION = Struct([Field("PartitionIndex", "int32")], name="OffsetDeleteRequestPartition")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="OffsetDeleteRequestTopic")

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("Topics", [_TOPIC]),
], name="OffsetDeleteRequest")

_PARTITION_RESPONSE = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
], name="OffsetDeleteResponsePartition")

_TOPIC_RESPONSE = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION_RESPONSE]),
], name="OffsetDeleteResponseTopic")

RESPONSE = Struct([
    Field("ErrorCode", "int16"),
    Field("ThrottleTimeMs", "int32"),
    Field("Topics", [_TOPIC_RESPONSE]),
], name="OffsetDeleteResponse")

SPEC = ApiSpec(ApiKey.OFFSET_DELETE, "OffsetDelete", 0, 0, 1, REQUEST, RESPONSE)     # 1: never flexible
