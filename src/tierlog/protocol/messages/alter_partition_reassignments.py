"""AlterPartitionReassignments (key 45), versions 0-1, flexible from 0 (KIP-455).

A null Replicas cancels a partition's pending reassignment. v1 (KIP-860)
adds AllowReplicationFactorChange (default true) to the request and echoes
it in the response. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("Replicas", ["int32"], nullable="0+", default=None),
], name="ReassignablePartition")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="ReassignableTopic")

REQUEST = Struct([
    Field("TimeoutMs", "int32", default=60000),
    Field("AllowReplicationFactorChange", "bool", versions="1+", default=True),
    Field("Topics", [_TOPIC]),
], name="AlterPartitionReassignmentsRequest")

_PARTITION_RESPONSE = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
], name="ReassignablePartitionResponse")

_TOPIC_RESPONSE = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION_RESPONSE]),
], name="ReassignableTopicResponse")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("AllowReplicationFactorChange", "bool", versions="1+", default=True),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("Responses", [_TOPIC_RESPONSE]),
], name="AlterPartitionReassignmentsResponse")

SPEC = ApiSpec(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignments",
               0, 1, 0, REQUEST, RESPONSE)
