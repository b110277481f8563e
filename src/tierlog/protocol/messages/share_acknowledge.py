"""ShareAcknowledge (key 79), versions 1-2, flexible from 0 (KIP-932).

Acknowledges records a share consumer holds without fetching, within its share
session (it never opens one: ShareSessionEpoch 0 is refused; -1 closes it).
v1 is the first stable version (Kafka 4.1); v2 adds IsRenewAck and acknowledge
type 4, renew (KIP-1222), and AcquisitionLockTimeoutMs in the response.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .share_common import ACKNOWLEDGEMENT_BATCH, LEADER_ID_AND_EPOCH, NODE_ENDPOINT

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_ACKNOWLEDGE_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("AcknowledgementBatches", [ACKNOWLEDGEMENT_BATCH]),
], name="AcknowledgePartition")

_ACKNOWLEDGE_TOPIC = Struct([
    Field("TopicId", "uuid"),
    Field("Partitions", [_ACKNOWLEDGE_PARTITION]),
], name="AcknowledgeTopic")

REQUEST = Struct([
    Field("GroupId", "string", nullable="0+", default=None),
    Field("MemberId", "string", nullable="0+"),
    Field("ShareSessionEpoch", "int32"),
    Field("IsRenewAck", "bool", versions="2+", default=False),
    Field("Topics", [_ACKNOWLEDGE_TOPIC]),
], name="ShareAcknowledgeRequest")

_PARTITION_DATA = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("CurrentLeader", LEADER_ID_AND_EPOCH),
], name="PartitionData")

_TOPIC_RESPONSE = Struct([
    Field("TopicId", "uuid"),
    Field("Partitions", [_PARTITION_DATA]),
], name="ShareAcknowledgeTopicResponse")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("AcquisitionLockTimeoutMs", "int32", versions="2+"),
    Field("Responses", [_TOPIC_RESPONSE]),
    Field("NodeEndpoints", [NODE_ENDPOINT]),
], name="ShareAcknowledgeResponse")

SPEC = ApiSpec(ApiKey.SHARE_ACKNOWLEDGE, "ShareAcknowledge", 1, 2, 0, REQUEST, RESPONSE)
