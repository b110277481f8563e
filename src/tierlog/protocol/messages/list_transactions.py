"""ListTransactions (key 66), versions 0-1, flexible (KIP-664): the transactions a broker
coordinates; v1 adds DurationFilter (KIP-994: running longer than this many ms)."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("StateFilters", ["string"]),
    Field("ProducerIdFilters", ["int64"]),
    Field("DurationFilter", "int64", versions="1+", default=-1),
], name="ListTransactionsRequest")

_STATE = Struct([
    Field("TransactionalId", "string"),
    Field("ProducerId", "int64"),
    Field("TransactionState", "string"),
], name="TransactionState")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("UnknownStateFilters", ["string"]),
    Field("TransactionStates", [_STATE]),
], name="ListTransactionsResponse")

SPEC = ApiSpec(ApiKey.LIST_TRANSACTIONS, "ListTransactions", 0, 1, 0, REQUEST, RESPONSE)
