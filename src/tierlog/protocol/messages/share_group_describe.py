"""ShareGroupDescribe (key 77), version 1, flexible from 1 (KIP-932).

Describes share groups: state, group and assignment epochs, the assignor and
each member with its subscription and assignment (topic ids with names).
Version 0 (Kafka 4.0's early access) was removed in Kafka 4.1.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("GroupIds", ["string"]),
    Field("IncludeAuthorizedOperations", "bool"),
], name="ShareGroupDescribeRequest")

_TOPIC_PARTITIONS = Struct([
    Field("TopicId", "uuid"),
    Field("TopicName", "string"),
    Field("Partitions", ["int32"]),
], name="TopicPartitions")

_ASSIGNMENT = Struct([
    Field("TopicPartitions", [_TOPIC_PARTITIONS]),
], name="Assignment")

_MEMBER = Struct([
    Field("MemberId", "string"),
    Field("RackId", "string", nullable="1+", default=None),
    Field("MemberEpoch", "int32"),
    Field("ClientId", "string"),
    Field("ClientHost", "string"),
    Field("SubscribedTopicNames", ["string"]),
    Field("Assignment", _ASSIGNMENT),
], name="Member")

_DESCRIBED_GROUP = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="1+", default=None),
    Field("GroupId", "string"),
    Field("GroupState", "string"),
    Field("GroupEpoch", "int32"),
    Field("AssignmentEpoch", "int32"),
    Field("AssignorName", "string"),
    Field("Members", [_MEMBER]),
    Field("AuthorizedOperations", "int32", default=-2147483648),
], name="DescribedGroup")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Groups", [_DESCRIBED_GROUP]),
], name="ShareGroupDescribeResponse")

SPEC = ApiSpec(ApiKey.SHARE_GROUP_DESCRIBE, "ShareGroupDescribe", 1, 1, 1, REQUEST, RESPONSE)
