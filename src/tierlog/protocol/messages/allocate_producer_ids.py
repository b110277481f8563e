"""AllocateProducerIds (key 67), version 0, flexible (KIP-730).

A broker asks the controller for a block of producer ids
[ProducerIdStart, ProducerIdStart + ProducerIdLen). Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("BrokerId", "int32"),
    Field("BrokerEpoch", "int64", default=-1),
], name="AllocateProducerIdsRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ProducerIdStart", "int64"),
    Field("ProducerIdLen", "int32"),
], name="AllocateProducerIdsResponse")

SPEC = ApiSpec(ApiKey.ALLOCATE_PRODUCER_IDS, "AllocateProducerIds", 0, 0, 0, REQUEST, RESPONSE)
