"""DeleteTopics (20), v1-6: forwarded to the active controller.

The broker then waits (up to TimeoutMs) until the deleted topics are gone from
its own image; its logs go when the image drops them (ReplicaManager).
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext, Response
from .forward import forward_and_wait

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DELETE_TOPICS, 1, 6


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> Response:
    def deleted(response):
        names = {r["Name"] for r in response["Responses"] if r["ErrorCode"] == ErrorCode.NONE and r["Name"]}
        return lambda image: not any(n in image.topics for n in names)

    return forward_and_wait(broker, header, request, deleted, request.get("TimeoutMs", 0))
