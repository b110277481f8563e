"""CreateTopics (19), v2-7: forwarded to the active controller, as a KRaft broker does.

The controller validates and places the topics (``tierlog.controller``),
replication factor included.  Once it answers, the broker waits (up to the
request's timeoutMs) until the created topics are in its own metadata image,
so a client that asks this broker for Metadata right after sees them.
ACLs: CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED for it (the
others are created). Controller mutation quota (KIP-599, ``mutation_quota``): a topic counts
its partitions (NumPartitions, its assignments, or num.partitions); strict from v6.
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
    from tierlog.protocol.typed.create_topics import (
        CreateTopicsRequest,
        CreateTopicsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.CREATE_TOPICS, 2, 7
STRICT_QUOTA_FROM = 6       # KIP-599


def handle(broker: HandlerContext, header: RequestHeader, request: CreateTopicsRequest) -> Response[CreateTopicsResponse]:
    default_partitions = broker.config.int_of("num.partitions")

    def permits(t) -> int:
        return t["NumPartitions"] if t["NumPartitions"] > 0 else len(t.get("Assignments") or []) or default_partitions
    forward = within_quota(broker, header, "Topics", "Topics", permits, header.api_version >= STRICT_QUOTA_FROM,
                           lambda t: _refused(t, ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE),
                           lambda r: _forward(broker, header, r))
    if broker.authorizer is None:
        return forward(request)
    on_cluster = authz.cluster(broker, header, authz.Op.CREATE)
    return authz.forward_allowed(
        request, "Topics", "Topics",
        lambda t: on_cluster or authz.topic(broker, header, authz.Op.CREATE, t["Name"]),
        lambda t: _refused(t, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None), forward)


def _refused(t: dict, code: int, message: str | None) -> dict:
    return {"Name": t["Name"], "TopicId": bytes(16), "ErrorCode": code,
            "ErrorMessage": message, "NumPartitions": -1, "ReplicationFactor": -1, "Configs": None}


def _forward(broker, header, request):
    def created(response):
        names = {t["Name"] for t in response["Topics"] if t["ErrorCode"] == ErrorCode.NONE}
        return lambda image: all(n in image.topics for n in names)

    wait = not request.get("validateOnly", False)      # Kafka spells this one lower camel case
    return forward_and_wait(broker, header, request, created if wait else None, request.get("timeoutMs", 0))
