"""ListPartitionReassignments (key 46), version 0, flexible (KIP-455).

A null Topics lists every ongoing reassignment. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC = Struct([
    Field("Name", "string"),
    Field("PartitionIndexes", ["int32"]),
], name="ListPartitionReassignmentsTopics")

REQUEST = Struct([
    Field("TimeoutMs", "int32", default=60000),
    Field("Topics", [_TOPIC], nullable="0+", default=None),
], name="ListPartitionReassignmentsRequest")

_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("Replicas", ["int32"]),
    Field("AddingReplicas", ["int32"]),
    Field("RemovingReplicas", ["int32"]),
], name="OngoingPartitionReassignment")

_ONGOING_TOPIC = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION]),
], name="OngoingTopicReassignment")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("Topics", [_ONGOING_TOPIC]),
], name="ListPartitionReassignmentsResponse")

SPEC = ApiSpec(ApiKey.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments",
               0, 0, 0, REQUEST, RESPONSE)
