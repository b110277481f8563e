"""ReadShareGroupState (key 84), version 0, flexible (KIP-932): between brokers, to the share coordinator.

A partition leader reads a share-partition's persisted state at its leader epoch (an older
epoch than the stored one is FENCED_LEADER_EPOCH).
Answered per partition: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION
(never initialized), FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH, INVALID_REQUEST.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field

from .share_common import STATE_BATCH, state_request, state_response

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = state_request("ReadShareGroupStateRequest", [
    Field("LeaderEpoch", "int32"),
])
RESPONSE = state_response("ReadShareGroupStateResponse", [
    Field("StateEpoch", "int32"),
    Field("StartOffset", "int64"),
    Field("StateBatches", [STATE_BATCH]),
])

SPEC = ApiSpec(ApiKey.READ_SHARE_GROUP_STATE, "ReadShareGroupState", 0, 0, 0, REQUEST, RESPONSE)
