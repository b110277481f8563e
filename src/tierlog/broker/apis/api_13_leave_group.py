"""LeaveGroup (13), v0-5: members leave a classic group.

v0-2 name one MemberId (its error is the top-level ErrorCode); v3+ batch
members, by member id or static group instance id, with per-member errors.
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
    from tierlog.protocol.typed.leave_group import LeaveGroupRequest, LeaveGroupResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LEAVE_GROUP, 0, 5
BATCHED_FROM = 3


async def handle(broker: HandlerContext, header: RequestHeader, request: LeaveGroupRequest) -> LeaveGroupResponse:
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED, "Members": []}
    batched = header.api_version >= BATCHED_FROM
    members = ([(m["MemberId"], m.get("GroupInstanceId")) for m in request["Members"]] if batched
               else [(request["MemberId"], None)])
    resp = await broker.groups.run(request["GroupId"],
                                   lambda shard, token, now: shard.leave(request["GroupId"], members, token, now),
                                   lambda code: {"ErrorCode": code, "Members": []})
    code = resp["ErrorCode"]
    if not batched and not code and resp["Members"]:
        code = resp["Members"][0]["ErrorCode"]
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "Members": resp["Members"]}
