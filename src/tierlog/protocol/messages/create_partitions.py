"""CreatePartitions (key 37), versions 0-3, flexible from 2.

Count is the topic's new total partition count; Assignments (null: placed by
the controller) gives the replicas of each new partition. v1 is v0; v3 is v2
(it may answer THROTTLING_QUOTA_EXCEEDED, which tierlog never does). Nothing
is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_ASSIGNMENT = Struct([
    Field("BrokerIds", ["int32"]),
], name="CreatePartitionsAssignment")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("Count", "int32"),
    Field("Assignments", [_ASSIGNMENT], nullable="0+", default=None),
], name="CreatePartitionsTopic")

REQUEST = Struct([
    Field("Topics", [_TOPIC]),
    Field("TimeoutMs", "int32", default=60000),
    Field("ValidateOnly", "bool", default=False),
], name="CreatePartitionsRequest")

_RESULT = Struct([
    Field("Name", "string"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
], name="CreatePartitionsTopicResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Results", [_RESULT]),
], name="CreatePartitionsResponse")

SPEC = ApiSpec(ApiKey.CREATE_PARTITIONS, "CreatePartitions", 0, 3, 2, REQUEST, RESPONSE)
