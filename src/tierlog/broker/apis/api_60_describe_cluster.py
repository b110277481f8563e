"""DescribeCluster (60), v0-1: cluster id, controller and live brokers from the image.

Authorized operations are not computed (no ACLs): -2147483648 ("not requested").
IncludeClusterAuthorizedOperations: the principal's bit set of cluster operations (as Kafka,
no check otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.metadata.acls import CLUSTER_NAME, ResourceType
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_cluster import (
        DescribeClusterRequest,
        DescribeClusterResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DESCRIBE_CLUSTER, 0, 1


def handle(broker: HandlerContext, header: RequestHeader, request: DescribeClusterRequest) -> DescribeClusterResponse:
    image = broker.image
    return {
        "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "EndpointType": 1,
        "ClusterId": image.cluster_id, "ControllerId": broker.node_id,     # KRaft: clients reach the controller through a broker
        "Brokers": [{"BrokerId": b.node_id, "Host": a[0], "Port": a[1], "Rack": b.rack}
                    for b in image.brokers.values() if not b.fenced
                    for a in [b.address(header.listener)] if a is not None],     # on the request's listener
        "ClusterAuthorizedOperations": (authz.authorized_operations(broker, header, ResourceType.CLUSTER, CLUSTER_NAME)
                                        if request.get("IncludeClusterAuthorizedOperations") else -2147483648),
    }
