"""TxnOffsetCommit (key 28), versions 0-4, flexible from 3.

v2 CommittedLeaderEpoch; v3 GenerationId, MemberId, GroupInstanceId (KIP-447).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("CommittedOffset", "int64"),
    Field("CommittedLeaderEpoch", "int32", versions="2+", default=-1),
    Field("CommittedMetadata", "string", nullable="0+"),
], name="TxnOffsetCommitRequestPartition")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="TxnOffsetCommitRequestTopic")

REQUEST = Struct([
    Field("TransactionalId", "string"),
    Field("GroupId", "string"),
    Field("ProducerId", "int64"),
    Field("ProducerEpoch", "int16"),
    Field("GenerationId", "int32", versions="3+", default=-1),
    Field("MemberId", "string", versions="3+", default=""),
    Field("GroupInstanceId", "string", versions="3+", nullable="3+", default=None),
    Field("Topics", [_TOPIC]),
], name="TxnOffsetCommitRequest")

_PARTITION_RESPONSE = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
], name="TxnOffsetCommitResponsePartition")

_TOPIC_RESPONSE = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION_RESPONSE]),
], name="TxnOffsetCommitResponseTopic")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Topics", [_TOPIC_RESPONSE]),
], name="TxnOffsetCommitResponse")

SPEC = ApiSpec(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 4, 3, REQUEST, RESPONSE)
