"""InitProducerId (key 22), versions 0-5, flexible from 2.

v3 ProducerId/ProducerEpoch in the request (KIP-360 epoch bumps); v4 and v5
only change error semantics.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("TransactionalId", "string", nullable="0+"),
    Field("TransactionTimeoutMs", "int32"),
    Field("ProducerId", "int64", versions="3+", default=-1),
    Field("ProducerEpoch", "int16", versions="3+", default=-1),
], name="InitProducerIdRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ProducerId", "int64", default=-1),
    Field("ProducerEpoch", "int16"),
], name="InitProducerIdResponse")

SPEC = ApiSpec(ApiKey.INIT_PRODUCER_ID, "InitProducerId", 0, 5, 2, REQUEST, RESPONSE)
