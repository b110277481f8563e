"""Produce (key 0), versions 0-12, flexible from 9.

v1 ThrottleTimeMs; v2 LogAppendTimeMs; v3 TransactionalId (record batch v2);
v5 LogStartOffset; v8 RecordErrors and ErrorMessage; v10 (KIP-951) the
per-partition CurrentLeader tag 0 and the top-level NodeEndpoints tag 0 of the
response. Request v10 equals v9. v11 and v12 change no field: v11 lets the
broker answer TRANSACTION_ABORTABLE, v12 says the client runs transaction.version
2 (the leader adds the partition to the transaction itself; KIP-890 part 2).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PARTITION_DATA = Struct([
    Field("Index", "int32"),
    Field("Records", "records", nullable="0+"),
], name="PartitionProduceData")

_TOPIC_DATA = Struct([
    Field("Name", "string"),
    Field("PartitionData", [_PARTITION_DATA]),
], name="TopicProduceData")

REQUEST = Struct([
    Field("TransactionalId", "string", versions="3+", nullable="3+", default=None),
    Field("Acks", "int16"),
    Field("TimeoutMs", "int32"),
    Field("TopicData", [_TOPIC_DATA]),
], name="ProduceRequest")

_RECORD_ERROR = Struct([
    Field("BatchIndex", "int32", versions="8+"),
    Field("BatchIndexErrorMessage", "string", versions="8+", nullable="8+", default=None),
], name="BatchIndexAndErrorMessage")

_LEADER_ID_AND_EPOCH = Struct([
    Field("LeaderId", "int32", versions="10+", default=-1),
    Field("LeaderEpoch", "int32", versions="10+", default=-1),
], name="LeaderIdAndEpoch")

_PARTITION_RESPONSE = Struct([
    Field("Index", "int32"),
    Field("ErrorCode", "int16"),
    Field("BaseOffset", "int64"),
    Field("LogAppendTimeMs", "int64", versions="2+", default=-1),
    Field("LogStartOffset", "int64", versions="5+", default=-1),
    Field("RecordErrors", [_RECORD_ERROR], versions="8+"),
    Field("ErrorMessage", "string", versions="8+", nullable="8+", default=None),
    Field("CurrentLeader", _LEADER_ID_AND_EPOCH, versions="10+", tag=0),
], name="PartitionProduceResponse")

_TOPIC_RESPONSE = Struct([
    Field("Name", "string"),
    Field("PartitionResponses", [_PARTITION_RESPONSE]),
], name="TopicProduceResponse")

_NODE_ENDPOINT = Struct([
    Field("NodeId", "int32", versions="10+"),
    Field("Host", "string", versions="10+"),
    Field("Port", "int32", versions="10+"),
    Field("Rack", "string", versions="10+", nullable="10+", default=None),
], name="NodeEndpoint")

RESPONSE = Struct([
    Field("Responses", [_TOPIC_RESPONSE]),
    Field("ThrottleTimeMs", "int32", versions="1+", default=0),
    Field("NodeEndpoints", [_NODE_ENDPOINT], versions="10+", tag=0),
], name="ProduceResponse")

SPEC = ApiSpec(ApiKey.PRODUCE, "Produce", 0, 12, 9, REQUEST, RESPONSE)
