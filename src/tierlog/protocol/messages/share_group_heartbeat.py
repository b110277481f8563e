"""ShareGroupHeartbeat (key 76), version 1, flexible from 0 (KIP-932).

A share consumer's one membership call: it joins with MemberEpoch 0 and a
member id it generated, heartbeats with its current epoch and leaves with -1.
RackId and SubscribedTopicNames are null when unchanged since the last
heartbeat.  The coordinator assigns (the ``simple`` share assignor); there is
no revocation step, so no rebalance timeout.  Version 0 (Kafka 4.0's early
access) was removed in Kafka 4.1; the layout did not change.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("MemberId", "string"),
    Field("MemberEpoch", "int32"),
    Field("RackId", "string", nullable="0+", default=None),
    Field("SubscribedTopicNames", ["string"], nullable="0+", default=None),
], name="ShareGroupHeartbeatRequest")

_TOPIC_PARTITIONS = Struct([
    Field("TopicId", "uuid"),
    Field("Partitions", ["int32"]),
], name="TopicPartitions")

_ASSIGNMENT = Struct([
    Field("TopicPartitions", [_TOPIC_PARTITIONS]),
], name="Assignment")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("MemberId", "string", nullable="0+", default=None),
    Field("MemberEpoch", "int32"),
    Field("HeartbeatIntervalMs", "int32"),
    Field("Assignment", _ASSIGNMENT, nullable="0+", default=None),
], name="ShareGroupHeartbeatResponse")

SPEC = ApiSpec(ApiKey.SHARE_GROUP_HEARTBEAT, "ShareGroupHeartbeat", 1, 1, 0, REQUEST, RESPONSE)
