"""DeleteTopics (20), v1-6: forwarded to the active controller.

The broker then waits (up to TimeoutMs) until the deleted topics are gone from
its own image; its logs go when the image drops them (ReplicaManager).
ACLs: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED for it (the others are deleted).
Controller mutation quota (KIP-599, ``mutation_quota``): a topic counts its partitions; strict from v5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response
from .forward import forward_and_wait
from .mutation_quota import THROTTLED_MESSAGE, within_quota

if TYPE_CHECKING:
    from tierlog.protocol.typed.delete_topics import (
        DeleteTopicsRequest,
        DeleteTopicsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DELETE_TOPICS, 1, 6
NAMES_OR_IDS_FROM = 6
STRICT_QUOTA_FROM = 5       # KIP-599


def handle(broker: HandlerContext, header: RequestHeader, request: DeleteTopicsRequest) -> Response[DeleteTopicsResponse]:
    def deleted(response):
        names = {r["Name"] for r in response["Responses"] if r["ErrorCode"] == ErrorCode.NONE and r["Name"]}
        return lambda image: not any(n in image.topics for n in names)

    def send(r):
        return forward_and_wait(broker, header, r, deleted, request.get("TimeoutMs", 0))

    by_name = header.api_version < NAMES_OR_IDS_FROM
    forward = within_quota(broker, header, "TopicNames" if by_name else "Topics", "Responses",
                           lambda t: _partitions(broker, t if by_name else t.get("Name"), None if by_name else t),
                           header.api_version >= STRICT_QUOTA_FROM,
                           lambda t: _throttled(t if by_name else t.get("Name"),
                                                bytes(16) if by_name else t.get("TopicId", bytes(16))), send)
    if broker.authorizer is None:
        return forward(request)
    if header.api_version < NAMES_OR_IDS_FROM:
        return authz.forward_allowed(request, "TopicNames", "Responses",
                                     lambda n: authz.topic(broker, header, authz.Op.DELETE, n),
                                     lambda n: _refused(n, bytes(16)), forward)
    return authz.forward_allowed(request, "Topics", "Responses", lambda t: _may_delete(broker, header, t),
                                 lambda t: _refused(t.get("Name"), t.get("TopicId", bytes(16))), forward)


def _may_delete(broker, header, t: dict) -> bool:
    name = t.get("Name")
    if name is None:            # by id: an unknown id is the controller's to answer
        info = broker.image.topic_by_id(t.get("TopicId", bytes(16)))
        if info is None:
            return True
        name = info.name
    return authz.topic(broker, header, authz.Op.DELETE, name)


def _partitions(broker, name: str | None, t: dict | None) -> int:
    info = broker.image.topics.get(name) if name is not None else \
        broker.image.topic_by_id((t or {}).get("TopicId", bytes(16)))
    return len(info.partitions) if info is not None else 0


def _throttled(name, topic_id: bytes) -> dict:
    return {"Name": name, "TopicId": topic_id, "ErrorCode": ErrorCode.THROTTLING_QUOTA_EXCEEDED,
            "ErrorMessage": THROTTLED_MESSAGE}


def _refused(name, topic_id: bytes) -> dict:
    return {"Name": name, "TopicId": topic_id, "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "ErrorMessage": None}
