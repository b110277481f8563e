"""ShareGroupHeartbeat (76), v1: a share consumer's membership (KIP-932).

Joins (MemberEpoch 0, with the member id the client made and its subscribed topic names),
heartbeats and leaves (-1) a share group; the coordinator assigns with the ``simple`` share
assignor (rules in ``group/share_group.py``, the shard's ``share_heartbeat``).  The topics are
the broker's metadata image's when the heartbeat is handled.  GROUP_ID_NOT_FOUND when a
classic or consumer group holds the id.  v0 (Kafka 4.0's early access) is not served: Kafka
4.1 removed it.  Not in ApiVersions until ShareFetch serves too (``apis.SHARE_APIS_ADVERTISED``).
ACLs: READ on the group, else GROUP_AUTHORIZATION_FAILED; DESCRIBE on every subscribed topic,
else TOPIC_AUTHORIZATION_FAILED (as Kafka's KafkaApis).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.share_group_heartbeat import (
        ShareGroupHeartbeatRequest,
        ShareGroupHeartbeatResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1


def _error(code: int, message: str | None = None) -> ShareGroupHeartbeatResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "MemberId": None, "MemberEpoch": 0,
            "HeartbeatIntervalMs": 0, "Assignment": None}


async def handle(broker: HandlerContext, header: RequestHeader,
                 request: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    if not authz.group(broker, header, authz.Op.READ, request["GroupId"]):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    subscribed = request["SubscribedTopicNames"] or []
    refused = set(subscribed) - authz.allowed_topics(broker, header, authz.Op.DESCRIBE, subscribed)
    if refused:
        return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                      f"The group is not authorized to describe topics {sorted(refused)}.")
    req = {**request, "client_id": header.client_id or "", "client_host": f"/{header.client_host}"}
    view = broker.groups.topics_view(broker.image)
    resp = await broker.groups.run(
        request["GroupId"], lambda shard, token, now: shard.share_heartbeat(req, token, now, view),
        lambda code: _error(code))
    return {**resp, "ThrottleTimeMs": 0}
