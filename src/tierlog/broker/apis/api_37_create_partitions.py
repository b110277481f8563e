"""CreatePartitions (37), v0-3: forwarded to the active controller, as a KRaft broker does.

The controller checks the new counts and assignments and writes one
PartitionRecord per new partition (``controller.partition_creation``).  Once
it answers, the broker waits (up to the request's TimeoutMs, at most
``forward.IMAGE_WAIT_MAX_S``) until its own image has every grown topic's new
partitions, so Metadata from this broker shows them; the brokers that host
them create their logs as they apply the image.  ValidateOnly changes nothing
and does not wait.  If no controller answers in time every topic gets
REQUEST_TIMED_OUT.
ACLs: ALTER on the topic, else TOPIC_AUTHORIZATION_FAILED for it. Controller mutation quota
(KIP-599, ``mutation_quota``): a topic counts the partitions it adds; strict from v3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response
from .forward import TIMED_OUT_MESSAGE, forward_and_wait
from .mutation_quota import THROTTLED_MESSAGE, within_quota

if TYPE_CHECKING:
    from tierlog.protocol.typed.create_partitions import (
        CreatePartitionsRequest,
        CreatePartitionsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.CREATE_PARTITIONS, 0, 3
STRICT_QUOTA_FROM = 3       # KIP-599


def handle(broker: HandlerContext, header: RequestHeader, request: CreatePartitionsRequest) -> Response[CreatePartitionsResponse]:
    counts = {t["Name"]: t["Count"] for t in request["Topics"]}

    def grown(response):
        names = [r["Name"] for r in response["Results"] if r["ErrorCode"] == ErrorCode.NONE]
        return lambda image: all(n in image.topics and len(image.topics[n].partitions) >= counts[n] for n in names)

    wait = not request.get("ValidateOnly", False)

    def send(r):
        return forward_and_wait(broker, header, r, grown if wait else None, request.get("TimeoutMs", 0), _timed_out)

    def added(t) -> int:
        topic = broker.image.topics.get(t["Name"])
        return max(0, t["Count"] - len(topic.partitions)) if topic is not None else 0
    forward = within_quota(broker, header, "Topics", "Results", added, header.api_version >= STRICT_QUOTA_FROM,
                           lambda t: {"Name": t["Name"], "ErrorCode": ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                                      "ErrorMessage": THROTTLED_MESSAGE}, send)
    if broker.authorizer is None:
        return forward(request)
    return authz.forward_allowed(request, "Topics", "Results",
                                 lambda t: authz.topic(broker, header, authz.Op.ALTER, t["Name"]),
                                 lambda t: {"Name": t["Name"], "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                            "ErrorMessage": None}, forward)


def _timed_out(request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    return {"ThrottleTimeMs": 0, "Results": [
        {"Name": t["Name"], "ErrorCode": ErrorCode.REQUEST_TIMED_OUT, "ErrorMessage": TIMED_OUT_MESSAGE}
        for t in request["Topics"]]}
