"""CreateTopics (19), v2-7: forwarded to the active controller, as a KRaft broker does.

The controller validates and places the topics (``tierlog.controller``).  Once
it answers, the broker waits (up to the request's timeoutMs) until the created
topics are in its own metadata image, so a client that asks this broker for
Metadata right after sees them.

Until brokers replicate partitions (issue 4), a replication factor above 1 is
refused here with INVALID_REPLICATION_FACTOR rather than accepted and silently
left unreplicated.
"""
from tierlog.protocol.errors import ErrorCode

from .forward import forward_and_wait

API_KEY, MIN_VERSION, MAX_VERSION = 19, 2, 7
NO_REPLICATION = "Replication between brokers is not available yet: use replication factor 1."


def handle(broker, header, request):
    refused = [t for t in request["Topics"] if _replicated(broker, t)]
    if not refused:
        return _forward(broker, header, request)
    return _partly(broker, header, request, refused)


def _replicated(broker, t) -> bool:
    rf = broker.config["default.replication.factor"] if t["ReplicationFactor"] == -1 else t["ReplicationFactor"]
    return rf > 1 or any(len(a["BrokerIds"]) > 1 for a in t["Assignments"] or [])


async def _partly(broker, header, request, refused) -> dict:
    rest = [t for t in request["Topics"] if t not in refused]
    response = {"ThrottleTimeMs": 0, "Topics": []}
    if rest:
        response = await _forward(broker, header, {**request, "Topics": rest})
    response["Topics"] += [{"Name": t["Name"], "TopicId": bytes(16), "ErrorCode": ErrorCode.INVALID_REPLICATION_FACTOR,
                            "ErrorMessage": NO_REPLICATION, "NumPartitions": -1, "ReplicationFactor": -1,
                            "Configs": None} for t in refused]
    return response


def _forward(broker, header, request):
    def created(response):
        names = {t["Name"] for t in response["Topics"] if t["ErrorCode"] == 0}
        return lambda image: all(n in image.topics for n in names)

    wait = not request.get("validateOnly", False)      # Kafka spells this one lower camel case
    return forward_and_wait(broker, header, request, created if wait else None, request.get("timeoutMs", 0))
