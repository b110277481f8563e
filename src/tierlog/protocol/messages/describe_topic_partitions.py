"""DescribeTopicPartitions (key 75), version 0, flexible (KIP-966).

Metadata's successor for describing topics: per partition it adds the
eligible leader replicas (ELR) and the last known ELR, and it pages through
many partitions with ResponsePartitionLimit and a Cursor / NextCursor
(topic name, first partition index). An empty Topics asks for every topic.
Nothing is left out.

tierlog extension (KIP-1303, local-log leader eligibility): each response
partition carries a tagged field ``LocalLogCoverage`` (tag
:data:`LOCAL_LOG_COVERAGE_TAG`), one entry per replica: the
LocalLogStartTimestamp and LocalLogSizeBytes its leader last reported to the
controller (-1 = not reported) and ``Eligible``, whether the replica counts as
eligible under the effective ``leader.election.eligible.local.log.ms`` /
``.bytes`` at answer time (true when the feature is off or nothing is known).
Kafka clients skip the unknown tag.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["AUTHORIZED_OPERATIONS_UNKNOWN", "DEFAULT_PARTITION_LIMIT", "LOCAL_LOG_COVERAGE_TAG", "REQUEST",
           "RESPONSE", "SPEC"]

AUTHORIZED_OPERATIONS_UNKNOWN = -2147483648
DEFAULT_PARTITION_LIMIT = 2000      # the request's default ResponsePartitionLimit
LOCAL_LOG_COVERAGE_TAG = 1303       # tierlog's KIP-1303 per-replica coverage

_TOPIC_REQUEST = Struct([
    Field("Name", "string"),
], name="TopicRequest")

_CURSOR = Struct([
    Field("TopicName", "string"),
    Field("PartitionIndex", "int32"),
], name="Cursor")

REQUEST = Struct([
    Field("Topics", [_TOPIC_REQUEST]),
    Field("ResponsePartitionLimit", "int32", default=DEFAULT_PARTITION_LIMIT),
    Field("Cursor", _CURSOR, nullable="0+", default=None),
], name="DescribeTopicPartitionsRequest")

_COVERAGE = Struct([
    Field("BrokerId", "int32"),
    Field("LocalLogStartTimestamp", "int64", default=-1),
    Field("LocalLogSizeBytes", "int64", default=-1),
    Field("Eligible", "bool", default=True),
], name="ReplicaLocalLogCoverage")

_PARTITION = Struct([
    Field("ErrorCode", "int16"),
    Field("PartitionIndex", "int32"),
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32", default=-1),
    Field("ReplicaNodes", ["int32"]),
    Field("IsrNodes", ["int32"]),
    Field("EligibleLeaderReplicas", ["int32"], nullable="0+", default=None),
    Field("LastKnownElr", ["int32"], nullable="0+", default=None),
    Field("OfflineReplicas", ["int32"]),
    Field("LocalLogCoverage", [_COVERAGE], tag=LOCAL_LOG_COVERAGE_TAG),
], name="DescribeTopicPartitionsResponsePartition")

_TOPIC = Struct([
    Field("ErrorCode", "int16"),
    Field("Name", "string", nullable="0+", default=None),
    Field("TopicId", "uuid"),
    Field("IsInternal", "bool"),
    Field("Partitions", [_PARTITION]),
    Field("TopicAuthorizedOperations", "int32", default=AUTHORIZED_OPERATIONS_UNKNOWN),
], name="DescribeTopicPartitionsResponseTopic")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Topics", [_TOPIC]),
    Field("NextCursor", _CURSOR, nullable="0+", default=None),
], name="DescribeTopicPartitionsResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "DescribeTopicPartitions",
               0, 0, 0, REQUEST, RESPONSE)
