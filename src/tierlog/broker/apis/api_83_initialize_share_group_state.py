"""InitializeShareGroupState (83), v0 (KIP-932): a share-partition's state epoch and start
offset set on this broker's share coordinator, answered once written (``share_state``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .share_state import answer_each

if TYPE_CHECKING:
    from tierlog.protocol.typed.initialize_share_group_state import (
        InitializeShareGroupStateRequest,
        InitializeShareGroupStateResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, 0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: InitializeShareGroupStateRequest) -> InitializeShareGroupStateResponse:
    async def call(spk, p):
        return await broker.share_states.initialize_state(spk, p["StateEpoch"], p["StartOffset"]), {}
    return await answer_each(broker, header, request, call, {})     # type: ignore[return-value]
