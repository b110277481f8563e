"""Heartbeat (12), v0-4: keep a classic group member's session alive.

Errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
REBALANCE_IN_PROGRESS (rejoin), and the coordinator errors.
ACLs: READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.heartbeat import HeartbeatRequest, HeartbeatResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.HEARTBEAT, 0, 4


async def handle(broker: HandlerContext, header: RequestHeader, request: HeartbeatRequest) -> HeartbeatResponse:
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    resp = await broker.groups.run(request["GroupId"], lambda shard, token, now: shard.heartbeat(request, token, now),
                                   lambda code: {"ErrorCode": code})
    return {"ThrottleTimeMs": 0, "ErrorCode": resp["ErrorCode"]}
