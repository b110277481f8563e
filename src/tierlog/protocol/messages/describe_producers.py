"""DescribeProducers (key 61), version 0, flexible (KIP-664): the active producers of partitions
at their leader, with each one's open transaction's first offset."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC_REQUEST = Struct([
    Field("Name", "string"),
    Field("PartitionIndexes", ["int32"]),
], name="TopicRequest")

REQUEST = Struct([
    Field("Topics", [_TOPIC_REQUEST]),
], name="DescribeProducersRequest")

_PRODUCER = Struct([
    Field("ProducerId", "int64"),
    Field("ProducerEpoch", "int32"),
    Field("LastSequence", "int32", default=-1),
    Field("LastTimestamp", "int64", default=-1),
    Field("CoordinatorEpoch", "int32"),
    Field("CurrentTxnStartOffset", "int64", default=-1),
], name="ProducerState")

_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("ActiveProducers", [_PRODUCER]),
], name="PartitionResponse")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="TopicResponse")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Topics", [_TOPIC]),
], name="DescribeProducersResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_PRODUCERS, "DescribeProducers", 0, 0, 0, REQUEST, RESPONSE)
