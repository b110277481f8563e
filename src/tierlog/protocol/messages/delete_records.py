"""DeleteRecords (key 21), versions 0-2, flexible from 2.

Per partition the offset below which records are deleted (-1: the high
watermark); the answer is the partition's new low watermark. v1 is v0.
Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("Offset", "int64"),
], name="DeleteRecordsPartition")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="DeleteRecordsTopic")

REQUEST = Struct([
    Field("Topics", [_TOPIC]),
    Field("TimeoutMs", "int32", default=30000),
], name="DeleteRecordsRequest")

_PARTITION_RESULT = Struct([
    Field("PartitionIndex", "int32"),
    Field("LowWatermark", "int64", default=-1),
    Field("ErrorCode", "int16"),
], name="DeleteRecordsPartitionResult")

_TOPIC_RESULT = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION_RESULT]),
], name="DeleteRecordsTopicResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Topics", [_TOPIC_RESULT]),
], name="DeleteRecordsResponse")

SPEC = ApiSpec(ApiKey.DELETE_RECORDS, "DeleteRecords", 0, 2, 2, REQUEST, RESPONSE)
