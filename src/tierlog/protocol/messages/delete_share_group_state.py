"""DeleteShareGroupState (key 86), version 0, flexible (KIP-932): between brokers, to the share coordinator.

The group coordinator deletes a share-partition's persisted state (DeleteGroups, offsets deleted).
Answered per partition: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION
(never initialized), FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH, INVALID_REQUEST.
"""

from tierlog.protocol.api import ApiKey, ApiSpec

from .share_common import state_request, state_response

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = state_request("DeleteShareGroupStateRequest", [])
RESPONSE = state_response("DeleteShareGroupStateResponse", [])

SPEC = ApiSpec(ApiKey.DELETE_SHARE_GROUP_STATE, "DeleteShareGroupState", 0, 0, 0, REQUEST, RESPONSE)
