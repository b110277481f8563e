"""DescribeQuorum (55), v0-2: forwarded to the active controller (as Kafka's brokers do).

Only the quorum leader describes the quorum; another voter answers
NOT_LEADER_OR_FOLLOWER at partition level, which the controller channel does
not see as NOT_CONTROLLER.  So while the broker's idea of the leader is stale
(a leader change in flight), the request is re-sent for up to
``RETRY_FOR_S``; then the last answer is relayed as it is.  No controller at
all: REQUEST_TIMED_OUT at top level.
ACLs: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tierlog.broker.controller_channel import ControllerUnavailable
from tierlog.clock import monotonic_s
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_quorum import (
        DescribeQuorumRequest,
        DescribeQuorumResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_QUORUM, 0, 2

ATTEMPT_TIMEOUT_S = 5.0
RETRY_FOR_S = 2.0
RETRY_BACKOFF_S = 0.2


def _not_leader(response: dict) -> bool:
    return any(p.get("ErrorCode") == ErrorCode.NOT_LEADER_OR_FOLLOWER
               for t in response.get("Topics") or [] for p in t.get("Partitions") or [])


async def handle(broker: HandlerContext, header: RequestHeader, request: DescribeQuorumRequest) -> DescribeQuorumResponse:
    if not authz.cluster(broker, header, authz.Op.DESCRIBE):
        return {"ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "ErrorMessage": None, "Topics": [], "Nodes": []}
    deadline = monotonic_s() + RETRY_FOR_S
    while True:
        try:
            response = await broker.controller_channel.send(API_KEY, request, ATTEMPT_TIMEOUT_S, header.api_version)
        except ControllerUnavailable as e:
            return {"ErrorCode": ErrorCode.REQUEST_TIMED_OUT, "ErrorMessage": str(e), "Topics": [], "Nodes": []}
        if not _not_leader(response) or monotonic_s() >= deadline:
            return response
        await asyncio.sleep(RETRY_BACKOFF_S)
