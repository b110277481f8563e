"""BrokerHeartbeat (key 63), versions 0-1, flexible from 0 (KIP-631).

A registered broker's periodic heartbeat; it asks to be fenced, unfenced or
shut down (WantShutDown replaces ControlledShutdown under KRaft). v1 adds
the request's OfflineLogDirs tag 0 (KIP-858). The response's IsFenced
defaults to true, as in Kafka. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("BrokerId", "int32"),
    Field("BrokerEpoch", "int64", default=-1),
    Field("CurrentMetadataOffset", "int64"),
    Field("WantFence", "bool"),
    Field("WantShutDown", "bool"),
    Field("OfflineLogDirs", ["uuid"], versions="1+", tag=0),
], name="BrokerHeartbeatRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("IsCaughtUp", "bool", default=False),
    Field("IsFenced", "bool", default=True),
    Field("ShouldShutDown", "bool"),
], name="BrokerHeartbeatResponse")

SPEC = ApiSpec(ApiKey.BROKER_HEARTBEAT, "BrokerHeartbeat", 0, 1, 0, REQUEST, RESPONSE)
