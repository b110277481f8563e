"""WriteShareGroupState (85), v0 (KIP-932): what a partition leader changed in a share-partition,
written by this broker's share coordinator and answered once committed (``share_state``).
v1 (KIP-1226's DeliveryCompleteCount) is not served."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext
from .share_state import answer_each

if TYPE_CHECKING:
    from tierlog.protocol.typed.write_share_group_state import (
        WriteShareGroupStateRequest,
        WriteShareGroupStateResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.WRITE_SHARE_GROUP_STATE, 0, 0


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: WriteShareGroupStateRequest) -> WriteShareGroupStateResponse:
    async def call(spk, p):
        error = await broker.share_states.write_state(spk, p["StateEpoch"], p["LeaderEpoch"], p["StartOffset"],
                                                      p["StateBatches"])
        return error, {}
    return await answer_each(broker, header, request, call, {})     # type: ignore[return-value]
