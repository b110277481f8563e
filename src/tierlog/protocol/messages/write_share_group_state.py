"""WriteShareGroupState (key 85), version 0, flexible (KIP-932): between brokers, to the share coordinator.

A partition leader writes what changed in a share-partition (StartOffset -1: unchanged).  v1
(KIP-1226, DeliveryCompleteCount) is not served.
Answered per partition: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION
(never initialized), FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH, INVALID_REQUEST.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field

from .share_common import STATE_BATCH, state_request, state_response

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = state_request("WriteShareGroupStateRequest", [
    Field("StateEpoch", "int32"),
    Field("LeaderEpoch", "int32"),
    Field("StartOffset", "int64"),
    Field("StateBatches", [STATE_BATCH]),
])
RESPONSE = state_response("WriteShareGroupStateResponse", [])

SPEC = ApiSpec(ApiKey.WRITE_SHARE_GROUP_STATE, "WriteShareGroupState", 0, 0, 0, REQUEST, RESPONSE)
