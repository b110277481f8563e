"""The controller mutation quota (KIP-599) of CreateTopics, CreatePartitions and DeleteTopics.

``within_quota`` wraps a handler's forward: the client's token bucket
(``ClientQuotaManager.admit_mutations``) decides per topic, in the request's order, from the
partitions it creates or deletes; the refused topics are answered THROTTLING_QUOTA_EXCEEDED
here, the others forwarded, and the answer carries the throttle time (the connection is then
muted for it, as for the other quotas). Requests at versions before KIP-599's strict ones are
counted but never refused.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tierlog.protocol.errors import ErrorCode

__all__ = ["THROTTLED_MESSAGE", "within_quota"]

THROTTLED_MESSAGE = ErrorCode.THROTTLING_QUOTA_EXCEEDED.text


def within_quota(broker, header, items_key: str, results_key: str, permits: Callable[[Any], int], strict: bool,
                 refused: Callable[[Any], dict], forward):
    """``forward`` (request -> awaitable answer), limited by the client's controller mutation quota."""
    quotas = broker.quotas
    if quotas is None:
        return forward

    async def limited(request: Mapping[str, Any]) -> Any:
        items = request[items_key]
        verdicts, delay = quotas.admit_mutations(header, [permits(i) for i in items], strict)
        allowed = [i for i, ok in zip(items, verdicts, strict=True) if ok]
        refusals = [refused(i) for i, ok in zip(items, verdicts, strict=True) if not ok]
        if allowed:
            response = await forward(request if not refusals else {**request, items_key: allowed})
            response = {**response, results_key: response[results_key] + refusals}
        else:
            response = {"ThrottleTimeMs": 0, results_key: refusals}
        response["ThrottleTimeMs"] = max(delay, response.get("ThrottleTimeMs", 0))
        return response
    return limited
