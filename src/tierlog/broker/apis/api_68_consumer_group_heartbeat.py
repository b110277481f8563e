"""ConsumerGroupHeartbeat (68), v0-1: the consumer group protocol (KIP-848).

Joins (MemberEpoch 0), heartbeats, reconciles and leaves (-1, static -2) a
consumer-protocol group; the rules are in ``group/consumer.py``.  The
coordinator sees the topics of the broker's metadata image as they are when
the heartbeat is handled: a topic's new partitions, or a new topic matching
a member's regex, bump the group epoch then.  Answered once the group's
records are committed (acks=all) or with the coordinator errors.
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
    from tierlog.protocol.typed.consumer_group_heartbeat import (
        ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED, "ErrorMessage": None,
                "MemberId": None, "MemberEpoch": 0, "HeartbeatIntervalMs": 0, "Assignment": None}
    req = {**request, "client_id": header.client_id or "", "client_host": f"/{header.client_host}"}
    view = broker.groups.topics_view(broker.image)
    resp = await broker.groups.run(
        request["GroupId"], lambda shard, token, now: shard.consumer_heartbeat(req, token, now, view),
        lambda code: {"ErrorCode": code, "ErrorMessage": None, "MemberId": None, "MemberEpoch": 0,
                      "HeartbeatIntervalMs": 0, "Assignment": None})
    return {"ThrottleTimeMs": 0, **resp}
