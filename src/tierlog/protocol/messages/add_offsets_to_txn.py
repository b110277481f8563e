"""AddOffsetsToTxn (key 25), versions 0-4, flexible from 3 (v4 only changes error semantics)."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("TransactionalId", "string"),
    Field("ProducerId", "int64"),
    Field("ProducerEpoch", "int16"),
    Field("GroupId", "string"),
], name="AddOffsetsToTxnRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
], name="AddOffsetsToTxnResponse")

SPEC = ApiSpec(ApiKey.ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 4, 3, REQUEST, RESPONSE)
