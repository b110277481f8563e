"""ShareFetch (key 78), versions 1-2, flexible from 0 (KIP-932).

A share consumer fetches from a partition leader within a share session
(ShareSessionEpoch 0 opens it, -1 closes it, otherwise the next epoch) and
may piggy-back acknowledgements of records it holds.  The leader answers with
the records and which of them it acquired for this member, with their
delivery counts, under an acquisition lock of AcquisitionLockTimeoutMs.
v1 is the first stable version (Kafka 4.1; v0 was 4.0's early access, removed)
and adds MaxRecords and BatchSize; v2 adds ShareAcquireMode (KIP-1206) and
acknowledge type 4, renew (KIP-1222).  The response is the same at v1 and v2.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .share_common import ACKNOWLEDGEMENT_BATCH, LEADER_ID_AND_EPOCH, NODE_ENDPOINT

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_FETCH_PARTITION = Struct([
    Field("PartitionIndex", "int32"),
    Field("AcknowledgementBatches", [ACKNOWLEDGEMENT_BATCH]),
], name="FetchPartition")

_FETCH_TOPIC = Struct([
    Field("TopicId", "uuid"),
    Field("Partitions", [_FETCH_PARTITION]),
], name="FetchTopic")

_FORGOTTEN_TOPIC = Struct([
    Field("TopicId", "uuid"),
    Field("Partitions", ["int32"]),
], name="ForgottenTopic")

REQUEST = Struct([
    Field("GroupId", "string", nullable="0+", default=None),
    Field("MemberId", "string", nullable="0+"),
    Field("ShareSessionEpoch", "int32"),
    Field("MaxWaitMs", "int32"),
    Field("MinBytes", "int32"),
    Field("MaxBytes", "int32", default=0x7FFFFFFF),
    Field("MaxRecords", "int32", versions="1+"),
    Field("BatchSize", "int32", versions="1+"),
    Field("ShareAcquireMode", "int8", versions="2+"),
    Field("Topics", [_FETCH_TOPIC]),
    Field("ForgottenTopicsData", [_FORGOTTEN_TOPIC]),
], name="ShareFetchRequest")

_ACQUIRED_RECORDS = Struct([
    Field("FirstOffset", "int64"),
    Field("LastOffset", "int64"),
    Field("DeliveryCount", "int16"),
], name="AcquiredRecords")

_PARTITION_DATA = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("AcknowledgeErrorCode", "int16"),
    Field("AcknowledgeErrorMessage", "string", nullable="0+", default=None),
    Field("CurrentLeader", LEADER_ID_AND_EPOCH),
    Field("Records", "records", nullable="0+"),
    Field("AcquiredRecords", [_ACQUIRED_RECORDS]),
], name="PartitionData")

_TOPIC_RESPONSE = Struct([
    Field("TopicId", "uuid"),
    Field("Partitions", [_PARTITION_DATA]),
], name="ShareFetchableTopicResponse")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("AcquisitionLockTimeoutMs", "int32"),
    Field("Responses", [_TOPIC_RESPONSE]),
    Field("NodeEndpoints", [NODE_ENDPOINT]),
], name="ShareFetchResponse")

SPEC = ApiSpec(ApiKey.SHARE_FETCH, "ShareFetch", 1, 2, 0, REQUEST, RESPONSE)
