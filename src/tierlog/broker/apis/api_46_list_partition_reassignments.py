"""ListPartitionReassignments (46), v0: forwarded to the active controller.

The controller answers from its committed image (Topics null: every
reassigning partition).  No controller answers in time: REQUEST_TIMED_OUT at
top level.  Nothing is left out.
ACLs: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response
from .forward import TIMED_OUT_MESSAGE, forward_and_wait

if TYPE_CHECKING:
    from tierlog.protocol.typed.list_partition_reassignments import (
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0


def timed_out(request: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.REQUEST_TIMED_OUT, "ErrorMessage": TIMED_OUT_MESSAGE,
            "Topics": []}


def handle(broker: HandlerContext, header: RequestHeader,
           request: ListPartitionReassignmentsRequest) -> Response[ListPartitionReassignmentsResponse]:
    if not authz.cluster(broker, header, authz.Op.DESCRIBE):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "ErrorMessage": None,
                "Topics": []}
    return forward_and_wait(broker, header, request, None, 0, timed_out=timed_out)
