"""ReadShareGroupStateSummary (key 87), version 0, flexible (KIP-932): between brokers, to the share coordinator.

A share-partition's state epoch, leader epoch and start offset (DescribeShareGroupOffsets).
v1 (KIP-1226, DeliveryCompleteCount) is not served.
Answered per partition: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION
(never initialized), FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH, INVALID_REQUEST.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field

from .share_common import state_request, state_response

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = state_request("ReadShareGroupStateSummaryRequest", [
    Field("LeaderEpoch", "int32"),
])
RESPONSE = state_response("ReadShareGroupStateSummaryResponse", [
    Field("StateEpoch", "int32"),
    Field("LeaderEpoch", "int32"),
    Field("StartOffset", "int64"),
])

SPEC = ApiSpec(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, "ReadShareGroupStateSummary", 0, 0, 0, REQUEST, RESPONSE)
