"""ShareAcknowledge (79), v1-2 (KIP-932): a share-group member acknowledges records it holds on
this broker without fetching (accept, release, reject; renew from v2), within its share session
(never opened here: epoch 0 is INVALID_SHARE_SESSION_EPOCH; -1 closes it and releases what the
member still holds).  Answered once the changes are written to the share coordinator; each
partition's ErrorCode is its acknowledgement's (INVALID_RECORD_STATE for records the member does
not hold, NOT_LEADER_OR_FOLLOWER with CurrentLeader).  v2's IsRenewAck needs nothing more here:
renew is an acknowledge type like the others.  READ on the group and on each topic.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .share_answers import acknowledgements, checked, responses

if TYPE_CHECKING:
    from tierlog.protocol.typed.share_acknowledge import ShareAcknowledgeRequest, ShareAcknowledgeResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.SHARE_ACKNOWLEDGE, 1, 2


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    acks = acknowledgements(request["Topics"])
    error, refused = checked(broker, header, request, acks)
    shares = broker.share_partitions
    lock_ms = shares.config.record_lock_duration_ms
    if error:
        return {"ThrottleTimeMs": 0, "ErrorCode": error, "ErrorMessage": None, "AcquisitionLockTimeoutMs": lock_ms,
                "Responses": [], "NodeEndpoints": []}
    result = await shares.acknowledge(request["GroupId"] or "", request["MemberId"] or "", request["ShareSessionEpoch"],
                                      {tp: b for tp, b in acks.items() if tp not in refused})
    if result.error:
        return {"ThrottleTimeMs": 0, "ErrorCode": result.error, "ErrorMessage": None,
                "AcquisitionLockTimeoutMs": result.lock_timeout_ms, "Responses": [], "NodeEndpoints": []}
    for tp, code in refused.items():
        result.at(tp).acknowledge_error = code
    topics, endpoints = responses(broker, header, result, with_records=False)
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None,
            "AcquisitionLockTimeoutMs": result.lock_timeout_ms, "Responses": topics,   # type: ignore[typeddict-item]
            "NodeEndpoints": endpoints}
