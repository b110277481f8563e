"""DescribeCluster (key 60), versions 0-1, flexible from 0.

v1 adds EndpointType (1 brokers, 2 controllers).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_AUTHORIZED_OPERATIONS_UNKNOWN = -2147483648

REQUEST = Struct([
    Field("IncludeClusterAuthorizedOperations", "bool"),
    Field("EndpointType", "int8", versions="1+", default=1),
], name="DescribeClusterRequest")

_BROKER = Struct([
    Field("BrokerId", "int32"),
    Field("Host", "string"),
    Field("Port", "int32"),
    Field("Rack", "string", nullable="0+", default=None),
], name="DescribeClusterBroker")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("EndpointType", "int8", versions="1+", default=1),
    Field("ClusterId", "string"),
    Field("ControllerId", "int32", default=-1),
    Field("Brokers", [_BROKER]),
    Field("ClusterAuthorizedOperations", "int32", default=_AUTHORIZED_OPERATIONS_UNKNOWN),
], name="DescribeClusterResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_CLUSTER, "DescribeCluster", 0, 1, 0, REQUEST, RESPONSE)
