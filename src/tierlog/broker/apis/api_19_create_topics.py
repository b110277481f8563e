"""CreateTopics (19), v2-7: forwarded to the active controller, as a KRaft broker does.

The controller validates and places the topics (``tierlog.controller``),
replication factor included.  Once it answers, the broker waits (up to the
request's timeoutMs) until the created topics are in its own metadata image,
so a client that asks this broker for Metadata right after sees them.
"""
from .forward import forward_and_wait

API_KEY, MIN_VERSION, MAX_VERSION = 19, 2, 7


def handle(broker, header, request):
    return _forward(broker, header, request)


def _forward(broker, header, request):
    def created(response):
        names = {t["Name"] for t in response["Topics"] if t["ErrorCode"] == 0}
        return lambda image: all(n in image.topics for n in names)

    wait = not request.get("validateOnly", False)      # Kafka spells this one lower camel case
    return forward_and_wait(broker, header, request, created if wait else None, request.get("timeoutMs", 0))
