"""DeleteTopics (20), v1-6: forwarded to the active controller.

The broker then waits (up to TimeoutMs) until the deleted topics are gone from
its own image; its logs go when the image drops them (ReplicaManager).
"""
from .forward import forward_and_wait

API_KEY, MIN_VERSION, MAX_VERSION = 20, 1, 6


def handle(broker, header, request):
    def deleted(response):
        names = {r["Name"] for r in response["Responses"] if r["ErrorCode"] == 0 and r["Name"]}
        return lambda image: not any(n in image.topics for n in names)

    return forward_and_wait(broker, header, request, deleted, request.get("TimeoutMs", 0))
