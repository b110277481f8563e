"""ElectLeaders (key 43), versions 0-2, flexible from 2 (KIP-460).

v1 adds the request's ElectionType (0 preferred, 1 unclean) and the
response's top-level ErrorCode. A null TopicPartitions asks for every
partition; a missing key encodes as an empty list, as Kafka's default.
Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC_PARTITIONS = Struct([
    Field("Topic", "string"),
    Field("Partitions", ["int32"]),
], name="TopicPartitions")

REQUEST = Struct([
    Field("ElectionType", "int8", versions="1+"),
    Field("TopicPartitions", [_TOPIC_PARTITIONS], nullable="0+", default=[]),
    Field("TimeoutMs", "int32", default=60000),
], name="ElectLeadersRequest")

_PARTITION_RESULT = Struct([
    Field("PartitionId", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
], name="PartitionResult")

_ELECTION_RESULT = Struct([
    Field("Topic", "string"),
    Field("PartitionResult", [_PARTITION_RESULT]),
], name="ReplicaElectionResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16", versions="1+"),
    Field("ReplicaElectionResults", [_ELECTION_RESULT]),
], name="ElectLeadersResponse")

SPEC = ApiSpec(ApiKey.ELECT_LEADERS, "ElectLeaders", 0, 2, 2, REQUEST, RESPONSE)
