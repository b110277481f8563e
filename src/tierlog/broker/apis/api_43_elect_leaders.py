"""ElectLeaders (43), v0-2: forwarded to the active controller, as a KRaft broker does.

The controller runs the elections (``controller.partition_control``): PREFERRED
moves leadership to the KIP-1303 eligibility-sorted first replica, UNCLEAN
elects a replica of a leaderless partition even outside the ISR.  Once it
answers, the broker waits until its own image has caught up with the
metadata quorum's high watermark, so Metadata asked of this broker right after
names the new leaders.

When no controller answers in time, every named partition gets
REQUEST_TIMED_OUT; a request for every partition (null TopicPartitions) gets
it as the top-level ErrorCode (v1+; v0 has no such field and answers an empty
result list).
ACLs: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response
from .forward import TIMED_OUT_MESSAGE, forward_and_catch_up

if TYPE_CHECKING:
    from tierlog.protocol.typed.elect_leaders import (
        ElectLeadersRequest,
        ElectLeadersResponse,
        ReplicaElectionResult,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ELECT_LEADERS, 0, 2


def handle(broker: HandlerContext, header: RequestHeader, request: ElectLeadersRequest) -> Response[ElectLeadersResponse]:
    if not authz.cluster(broker, header, authz.Op.ALTER):
        return _refused(request)
    return forward_and_catch_up(broker, header, request, timed_out=timed_out)


def _refused(request: ElectLeadersRequest) -> ElectLeadersResponse:
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ReplicaElectionResults": [
        {"Topic": t["Topic"], "PartitionResult": [{"PartitionId": p, "ErrorCode": code, "ErrorMessage": None}
                                                  for p in t["Partitions"]]}
        for t in request.get("TopicPartitions") or []]}


def timed_out(request: ElectLeadersRequest) -> ElectLeadersResponse:
    """The answer when no controller answered: REQUEST_TIMED_OUT per partition asked for."""
    code = ErrorCode.REQUEST_TIMED_OUT
    wanted = request.get("TopicPartitions")
    results: list[ReplicaElectionResult] = [{"Topic": t["Topic"], "PartitionResult": [
        {"PartitionId": p, "ErrorCode": code, "ErrorMessage": TIMED_OUT_MESSAGE} for p in t["Partitions"]]}
        for t in wanted or []]
    return {"ThrottleTimeMs": 0, "ErrorCode": code if wanted is None else 0, "ReplicaElectionResults": results}
