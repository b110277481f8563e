"""ShareFetch (78), v1-2 (KIP-932): a share-group member fetches from the partitions this broker
leads within its share session, piggy-backing acknowledgements (``broker.share_partitions``).

- ShareSessionEpoch 0 opens (or replaces) the member's session, N continues it, -1 closes it
  (``group.share_session``); a session error is the top-level ErrorCode.
- Each partition answers its ErrorCode (UNKNOWN_TOPIC_ID, NOT_LEADER_OR_FOLLOWER with KIP-951's
  CurrentLeader and NodeEndpoints, TOPIC_AUTHORIZATION_FAILED), its AcknowledgeErrorCode
  (INVALID_RECORD_STATE for records the member does not hold; acknowledgements are written to
  the share coordinator before the answer), and the whole batches holding the records acquired
  for the member with their delivery counts (AcquiredRecords).
- MaxRecords bounds the records acquired, MaxBytes (capped by ``fetch.max.bytes``) the bytes
  read; with nothing acquired the fetch waits up to MaxWaitMs (capped by the broker's fetch
  wait).  MinBytes and BatchSize are not used (any acquired record answers at once);
  ShareAcquireMode (v2) is taken as batch-optimized or record-limit alike (MaxRecords is never
  exceeded).  AcquisitionLockTimeoutMs is the group's share.record.lock.duration.ms.
- READ on the group (GROUP_AUTHORIZATION_FAILED) and on each topic.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .share_answers import acknowledgements, checked, partitions_of, responses

if TYPE_CHECKING:
    from tierlog.protocol.typed.share_fetch import ShareFetchRequest, ShareFetchResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.SHARE_FETCH, 1, 2
MAX_RECORDS_DEFAULT = 500       # a request's MaxRecords of 0 or less (Kafka's max.poll.records default)


async def handle(broker: HandlerContext, header: RequestHeader, request: ShareFetchRequest) -> ShareFetchResponse:
    requested = partitions_of(request["Topics"])
    forgotten = partitions_of(request["ForgottenTopicsData"], index="")
    acks = acknowledgements(request["Topics"])
    error, refused = checked(broker, header, request, requested)
    shares = broker.share_partitions
    if error:
        return _answer(error, shares.config.record_lock_duration_ms)
    max_bytes = min(request["MaxBytes"], broker.fetch_max_bytes)
    max_records = request.get("MaxRecords", 0)
    result = await shares.fetch(request["GroupId"] or "", request["MemberId"] or "", request["ShareSessionEpoch"],
                                [tp for tp in requested if tp not in refused], forgotten,
                                {tp: b for tp, b in acks.items() if tp not in refused},
                                min(request["MaxWaitMs"], broker.fetch_wait_max_ms), max_bytes,
                                max_records if max_records > 0 else MAX_RECORDS_DEFAULT)
    if result.error:
        return _answer(result.error, result.lock_timeout_ms)
    for tp, code in refused.items():
        result.at(tp).error = code
    topics, endpoints = responses(broker, header, result, with_records=True)
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None,
            "AcquisitionLockTimeoutMs": result.lock_timeout_ms, "Responses": topics,   # type: ignore[typeddict-item]
            "NodeEndpoints": endpoints}


def _answer(error: int, lock_ms: int) -> ShareFetchResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "ErrorMessage": None, "AcquisitionLockTimeoutMs": lock_ms,
            "Responses": [], "NodeEndpoints": []}
