"""FindCoordinator (key 10), versions 0-6, flexible from 3.

v1 KeyType (0 group, 1 transaction) and ThrottleTimeMs/ErrorMessage; v4
batches keys: CoordinatorKeys in, Coordinators out; v5 may answer
TRANSACTION_ABORTABLE (KIP-890); v6 adds the share key type (KIP-932).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("Key", "string", versions="0-3"),
    Field("KeyType", "int8", versions="1+", default=0),
    Field("CoordinatorKeys", ["string"], versions="4+"),
], name="FindCoordinatorRequest")

_COORDINATOR = Struct([
    Field("Key", "string", versions="4+"),
    Field("NodeId", "int32", versions="4+"),
    Field("Host", "string", versions="4+"),
    Field("Port", "int32", versions="4+"),
    Field("ErrorCode", "int16", versions="4+"),
    Field("ErrorMessage", "string", versions="4+", nullable="4+"),
], name="Coordinator")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("ErrorCode", "int16", versions="0-3"),
    Field("ErrorMessage", "string", versions="1-3", nullable="1-3"),
    Field("NodeId", "int32", versions="0-3"),
    Field("Host", "string", versions="0-3"),
    Field("Port", "int32", versions="0-3"),
    Field("Coordinators", [_COORDINATOR], versions="4+"),
], name="FindCoordinatorResponse")

SPEC = ApiSpec(ApiKey.FIND_COORDINATOR, "FindCoordinator", 0, 6, 3, REQUEST, RESPONSE)
