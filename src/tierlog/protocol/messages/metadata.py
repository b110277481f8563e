"""Metadata (key 3), versions 0-13, flexible from 9.

v1 nullable Topics (null = all), Rack, ControllerId, IsInternal; v2 ClusterId;
v3 ThrottleTimeMs; v4 AllowAutoTopicCreation; v5 OfflineReplicas; v7
LeaderEpoch; v8-10 cluster authorized operations; v8+ topic authorized
operations; v10 topic ids; v12 nullable topic names in the response; v13 (KIP-1102) a top-level
ErrorCode in the response, after everything else (the request is the same
as v12).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_AUTHORIZED_OPERATIONS_UNKNOWN = -2147483648

_REQUEST_TOPIC = Struct([
    Field("TopicId", "uuid", versions="10+"),
    Field("Name", "string", nullable="10+"),
], name="MetadataRequestTopic")

REQUEST = Struct([
    Field("Topics", [_REQUEST_TOPIC], nullable="1+"),
    Field("AllowAutoTopicCreation", "bool", versions="4+", default=True),
    Field("IncludeClusterAuthorizedOperations", "bool", versions="8-10"),
    Field("IncludeTopicAuthorizedOperations", "bool", versions="8+"),
], name="MetadataRequest")

_BROKER = Struct([
    Field("NodeId", "int32"),
    Field("Host", "string"),
    Field("Port", "int32"),
    Field("Rack", "string", versions="1+", nullable="1+", default=None),
], name="MetadataResponseBroker")

_PARTITION = Struct([
    Field("ErrorCode", "int16"),
    Field("PartitionIndex", "int32"),
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32", versions="7+", default=-1),
    Field("ReplicaNodes", ["int32"]),
    Field("IsrNodes", ["int32"]),
    Field("OfflineReplicas", ["int32"], versions="5+"),
], name="MetadataResponsePartition")

_TOPIC = Struct([
    Field("ErrorCode", "int16"),
    Field("Name", "string", nullable="12+"),
    Field("TopicId", "uuid", versions="10+"),
    Field("IsInternal", "bool", versions="1+", default=False),
    Field("Partitions", [_PARTITION]),
    Field("TopicAuthorizedOperations", "int32", versions="8+",
          default=_AUTHORIZED_OPERATIONS_UNKNOWN),
], name="MetadataResponseTopic")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="3+"),
    Field("Brokers", [_BROKER]),
    Field("ClusterId", "string", versions="2+", nullable="2+", default=None),
    Field("ControllerId", "int32", versions="1+", default=-1),
    Field("Topics", [_TOPIC]),
    Field("ClusterAuthorizedOperations", "int32", versions="8-10",
          default=_AUTHORIZED_OPERATIONS_UNKNOWN),
    Field("ErrorCode", "int16", versions="13+"),
], name="MetadataResponse")

SPEC = ApiSpec(ApiKey.METADATA, "Metadata", 0, 13, 9, REQUEST, RESPONSE)
