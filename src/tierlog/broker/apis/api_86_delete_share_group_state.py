"""DeleteShareGroupState (86), v0 (KIP-932): a share-partition's persisted state deleted by this
broker's share coordinator (tombstones), answered once written (``share_state``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .share_state import answer_each

if TYPE_CHECKING:
    from tierlog.protocol.typed.delete_share_group_state import (
        DeleteShareGroupStateRequest,
        DeleteShareGroupStateResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DELETE_SHARE_GROUP_STATE, 0, 0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: DeleteShareGroupStateRequest) -> DeleteShareGroupStateResponse:
    async def call(spk, p):
        return await broker.share_states.delete_state(spk), {}
    return await answer_each(broker, header, request, call, {})     # type: ignore[return-value]
