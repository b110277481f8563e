"""DescribeTransactions (key 65), version 0, flexible (KIP-664): transactional ids' state at
their coordinator."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("TransactionalIds", ["string"]),
], name="DescribeTransactionsRequest")

_TOPIC = Struct([
    Field("Topic", "string"),
    Field("Partitions", ["int32"]),
], name="TopicData")

_STATE = Struct([
    Field("ErrorCode", "int16"),
    Field("TransactionalId", "string"),
    Field("TransactionState", "string"),
    Field("TransactionTimeoutMs", "int32"),
    Field("TransactionStartTimeMs", "int64"),
    Field("ProducerId", "int64"),
    Field("ProducerEpoch", "int16"),
    Field("Topics", [_TOPIC]),
], name="TransactionState")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("TransactionStates", [_STATE]),
], name="DescribeTransactionsResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_TRANSACTIONS, "DescribeTransactions", 0, 0, 0, REQUEST, RESPONSE)
