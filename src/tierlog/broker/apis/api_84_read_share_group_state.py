"""ReadShareGroupState (84), v0 (KIP-932): a share-partition's persisted state read by its
partition leader at the leader's epoch from this broker's share coordinator (``share_state``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .share_state import answer_each

if TYPE_CHECKING:
    from tierlog.protocol.typed.read_share_group_state import (
        ReadShareGroupStateRequest,
        ReadShareGroupStateResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.READ_SHARE_GROUP_STATE, 0, 0
_EMPTY = {"StateEpoch": -1, "StartOffset": -1, "StateBatches": []}


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: ReadShareGroupStateRequest) -> ReadShareGroupStateResponse:
    async def call(spk, p):
        return await broker.share_states.read_state(spk, p["LeaderEpoch"])
    return await answer_each(broker, header, request, call, _EMPTY)     # type: ignore[return-value]
