"""EndTxn (key 26), versions 0-5, flexible from 3.

v4 only changes error semantics; v5 (transaction.version 2, KIP-890 part 2)
answers the producer id and epoch the end bumped to.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("TransactionalId", "string"),
    Field("ProducerId", "int64"),
    Field("ProducerEpoch", "int16"),
    Field("Committed", "bool"),
], name="EndTxnRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ProducerId", "int64", versions="5+", default=-1),
    Field("ProducerEpoch", "int16", versions="5+", default=-1),
], name="EndTxnResponse")

SPEC = ApiSpec(ApiKey.END_TXN, "EndTxn", 0, 5, 3, REQUEST, RESPONSE)
