"""ConsumerGroupDescribe (key 69), versions 0-1, flexible from 0 (KIP-848).

A consumer-protocol group's epochs, assignor and members, each with its
current and target assignment.  v1 MemberType (KIP-1099: -1 unknown, 0 a
classic-protocol member, 1 a consumer-protocol member).
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["AUTHORIZED_OPERATIONS_UNKNOWN", "MEMBER_TYPE_CONSUMER", "REQUEST", "RESPONSE", "SPEC"]

AUTHORIZED_OPERATIONS_UNKNOWN = -2147483648
MEMBER_TYPE_CONSUMER = 1

REQUEST = Struct([
    Field("GroupIds", ["string"]),
    Field("IncludeAuthorizedOperations", "bool"),
], name="ConsumerGroupDescribeRequest")

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
    Field("InstanceId", "string", nullable="0+", default=None),
    Field("RackId", "string", nullable="0+", default=None),
    Field("MemberEpoch", "int32"),
    Field("ClientId", "string"),
    Field("ClientHost", "string"),
    Field("SubscribedTopicNames", ["string"]),
    Field("SubscribedTopicRegex", "string", nullable="0+", default=None),
    Field("Assignment", _ASSIGNMENT),
    Field("TargetAssignment", _ASSIGNMENT),
    Field("MemberType", "int8", versions="1+", default=-1),
], name="Member")

_GROUP = Struct([
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("GroupId", "string"),
    Field("GroupState", "string"),
    Field("GroupEpoch", "int32"),
    Field("AssignmentEpoch", "int32"),
    Field("AssignorName", "string"),
    Field("Members", [_MEMBER]),
    Field("AuthorizedOperations", "int32", default=AUTHORIZED_OPERATIONS_UNKNOWN),
], name="DescribedGroup")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Groups", [_GROUP]),
], name="ConsumerGroupDescribeResponse")

SPEC = ApiSpec(ApiKey.CONSUMER_GROUP_DESCRIBE, "ConsumerGroupDescribe", 0, 1, 0, REQUEST, RESPONSE)
