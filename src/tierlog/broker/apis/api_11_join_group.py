"""JoinGroup (11), v0-9: join a classic group (``group.classic``).

v4+ uses the two-step join (MEMBER_ID_REQUIRED); v5+ static membership.  The
answer waits for the join phase to end.  Left out: SkipAssignment (v9) is
always false (no broker-side assignors); the member's host is not known here.
ACLs: READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tierlog.group.classic import join_error
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.join_group import JoinGroupRequest, JoinGroupResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.JOIN_GROUP, 0, 9
NULLABLE_PROTOCOL_FROM = 7


async def handle(broker: HandlerContext, header: RequestHeader, request: JoinGroupRequest) -> JoinGroupResponse:
    # the member's host as Kafka shows it: "/127.0.0.1"
    req = dict(request, client_id=header.client_id or "", client_host=f"/{header.client_host}",
               version=header.api_version)
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        resp: Mapping[str, Any] = join_error(ErrorCode.GROUP_AUTHORIZATION_FAILED, request["MemberId"])
    else:
        resp = await broker.groups.run(request["GroupId"], lambda shard, token, now: shard.join(req, token, now),
                                       lambda code: join_error(code, request["MemberId"]))
    protocol = resp["ProtocolName"]
    if header.api_version < NULLABLE_PROTOCOL_FROM and protocol is None:
        protocol = ""
    return {"ThrottleTimeMs": 0, "ErrorCode": resp["ErrorCode"], "GenerationId": resp["GenerationId"],
            "ProtocolType": resp["ProtocolType"], "ProtocolName": protocol, "Leader": resp["Leader"],
            "SkipAssignment": resp["SkipAssignment"], "MemberId": resp["MemberId"], "Members": resp["Members"]}
