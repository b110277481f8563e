"""BrokerRegistration (key 62), versions 0-4, flexible from 0 (KIP-631).

A broker registers with the controller quorum and gets its broker epoch. v1
IsMigratingZkBroker (ZooKeeper migration; always false here); v2 LogDirs
(KIP-858); v3 PreviousBrokerEpoch (KIP-966, -1 when unknown); v4 has the same
fields as v3 (a v4 sender also lists features whose MinSupportedVersion is
0). The response is the same at every version. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_LISTENER = Struct([
    Field("Name", "string"),
    Field("Host", "string"),
    Field("Port", "uint16"),
    Field("SecurityProtocol", "int16"),
], name="Listener")

_FEATURE = Struct([
    Field("Name", "string"),
    Field("MinSupportedVersion", "int16"),
    Field("MaxSupportedVersion", "int16"),
], name="Feature")

REQUEST = Struct([
    Field("BrokerId", "int32"),
    Field("ClusterId", "string"),
    Field("IncarnationId", "uuid"),
    Field("Listeners", [_LISTENER]),
    Field("Features", [_FEATURE]),
    Field("Rack", "string", nullable="0+", default=None),
    Field("IsMigratingZkBroker", "bool", versions="1+", default=False),
    Field("LogDirs", ["uuid"], versions="2+"),
    Field("PreviousBrokerEpoch", "int64", versions="3+", default=-1),
], name="BrokerRegistrationRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("BrokerEpoch", "int64", default=-1),
], name="BrokerRegistrationResponse")

SPEC = ApiSpec(ApiKey.BROKER_REGISTRATION, "BrokerRegistration", 0, 4, 0, REQUEST, RESPONSE)
