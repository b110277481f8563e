"""AddPartitionsToTxn (key 24), versions 0-5, flexible from 3.

v0-3 are the client's form (one transaction, ``V3AndBelow*`` fields); v4+ the
broker-to-broker batched form (``Transactions`` with ``VerifyOnly``, KIP-890
part 1) with a top-level ErrorCode and ``ResultsByTransaction``.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", ["int32"]),
], name="AddPartitionsToTxnTopic")

_TRANSACTION = Struct([
    Field("TransactionalId", "string"),
    Field("ProducerId", "int64"),
    Field("ProducerEpoch", "int16"),
    Field("VerifyOnly", "bool", default=False),
    Field("Topics", [_TOPIC]),
], name="AddPartitionsToTxnTransaction")

REQUEST = Struct([
    Field("Transactions", [_TRANSACTION], versions="4+"),
    Field("V3AndBelowTransactionalId", "string", versions="0-3"),
    Field("V3AndBelowProducerId", "int64", versions="0-3"),
    Field("V3AndBelowProducerEpoch", "int16", versions="0-3"),
    Field("V3AndBelowTopics", [_TOPIC], versions="0-3"),
], name="AddPartitionsToTxnRequest")

_PARTITION_RESULT = Struct([
    Field("PartitionIndex", "int32"),
    Field("PartitionErrorCode", "int16"),
], name="AddPartitionsToTxnPartitionResult")

_TOPIC_RESULT = Struct([
    Field("Name", "string"),
    Field("ResultsByPartition", [_PARTITION_RESULT]),
], name="AddPartitionsToTxnTopicResult")

_RESULT = Struct([
    Field("TransactionalId", "string"),
    Field("TopicResults", [_TOPIC_RESULT]),
], name="AddPartitionsToTxnResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16", versions="4+"),
    Field("ResultsByTransaction", [_RESULT], versions="4+"),
    Field("ResultsByTopicV3AndBelow", [_TOPIC_RESULT], versions="0-3"),
], name="AddPartitionsToTxnResponse")

SPEC = ApiSpec(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 5, 3, REQUEST, RESPONSE)
