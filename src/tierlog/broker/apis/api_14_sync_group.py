"""SyncGroup (14), v0-5: the leader's assignment in, each member's own part out.

The leader's SyncGroup stores the assignment in ``__consumer_offsets``; every
member is answered once that record is committed.  v5 checks ProtocolType and
ProtocolName (INCONSISTENT_GROUP_PROTOCOL).
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
    from tierlog.protocol.typed.sync_group import SyncGroupRequest, SyncGroupResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.SYNC_GROUP, 0, 5


async def handle(broker: HandlerContext, header: RequestHeader, request: SyncGroupRequest) -> SyncGroupResponse:
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED, "ProtocolType": None,
                "ProtocolName": None, "Assignment": b""}
    resp = await broker.groups.run(request["GroupId"], lambda shard, token, now: shard.sync(request, token, now),
                                   lambda code: {"ErrorCode": code, "Assignment": b""})
    return {"ThrottleTimeMs": 0, "ErrorCode": resp["ErrorCode"], "ProtocolType": resp.get("ProtocolType"),
            "ProtocolName": resp.get("ProtocolName"), "Assignment": resp["Assignment"]}
