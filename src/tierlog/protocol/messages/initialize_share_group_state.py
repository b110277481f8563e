"""InitializeShareGroupState (key 83), version 0, flexible (KIP-932): between brokers, to the share coordinator.

A partition leader (or the group coordinator) sets a share-partition's state epoch and start
offset (-1: not set) before its first read.
Answered per partition: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION
(never initialized), FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH, INVALID_REQUEST.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field

from .share_common import state_request, state_response

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = state_request("InitializeShareGroupStateRequest", [
    Field("StateEpoch", "int32"),
    Field("StartOffset", "int64"),
])
RESPONSE = state_response("InitializeShareGroupStateResponse", [])

SPEC = ApiSpec(ApiKey.INITIALIZE_SHARE_GROUP_STATE, "InitializeShareGroupState", 0, 0, 0, REQUEST, RESPONSE)
