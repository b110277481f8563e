"""ReadShareGroupStateSummary (87), v0 (KIP-932): a share-partition's state epoch, leader epoch
and start offset from this broker's share coordinator (``share_state``).  v1 (KIP-1226's
DeliveryCompleteCount) is not served."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .share_state import answer_each

if TYPE_CHECKING:
    from tierlog.protocol.typed.read_share_group_state_summary import (
        ReadShareGroupStateSummaryRequest,
        ReadShareGroupStateSummaryResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, 0
_EMPTY = {"StateEpoch": -1, "LeaderEpoch": -1, "StartOffset": -1}


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: ReadShareGroupStateSummaryRequest) -> ReadShareGroupStateSummaryResponse:
    async def call(spk, p):
        return await broker.share_states.read_state_summary(spk)
    return await answer_each(broker, header, request, call, _EMPTY)     # type: ignore[return-value]
