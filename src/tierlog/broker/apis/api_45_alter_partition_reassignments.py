"""AlterPartitionReassignments (45), v0-1: forwarded to the active controller.

The controller validates each partition's target, writes one
PartitionChangeRecord per accepted partition (``controller.reassignment``) and
answers per partition.  The broker then waits until its own image has caught
up with the controller's high watermark, so Metadata on this broker already
shows the merged replica list.  No controller answers in time:
REQUEST_TIMED_OUT at top level and for every partition.  Nothing is left out.
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
    from tierlog.protocol.typed.alter_partition_reassignments import (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1


def timed_out(request: AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse:
    code = ErrorCode.REQUEST_TIMED_OUT
    return {"ThrottleTimeMs": 0, "AllowReplicationFactorChange": request.get("AllowReplicationFactorChange", True),
            "ErrorCode": code, "ErrorMessage": TIMED_OUT_MESSAGE,
            "Responses": [{"Name": t["Name"], "Partitions": [
                {"PartitionIndex": p["PartitionIndex"], "ErrorCode": code, "ErrorMessage": TIMED_OUT_MESSAGE}
                for p in t["Partitions"]]} for t in request["Topics"]]}


def handle(broker: HandlerContext, header: RequestHeader,
           request: AlterPartitionReassignmentsRequest) -> Response[AlterPartitionReassignmentsResponse]:
    if not authz.cluster(broker, header, authz.Op.ALTER):
        return {"ThrottleTimeMs": 0, "AllowReplicationFactorChange": request.get("AllowReplicationFactorChange", True),
                "ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "ErrorMessage": None, "Responses": []}
    return forward_and_catch_up(broker, header, request, timed_out=timed_out)
