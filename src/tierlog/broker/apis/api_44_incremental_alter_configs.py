"""IncrementalAlterConfigs (44), v0-1: forwarded to the active controller.

The controller validates SET / DELETE / APPEND / SUBTRACT on topic and broker
resources and writes ConfigRecords.  The broker then waits until its own image
has caught up with the controller's high watermark, so DescribeConfigs on this
broker shows the change.
ACLs: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or the cluster for a broker
(CLUSTER_AUTHORIZATION_FAILED); the refused resources are not forwarded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response
from .forward import forward_and_catch_up

if TYPE_CHECKING:
    from tierlog.protocol.typed.incremental_alter_configs import (
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1


def handle(broker: HandlerContext, header: RequestHeader,
           request: IncrementalAlterConfigsRequest) -> Response[IncrementalAlterConfigsResponse]:
    return authz.forward_configs(broker, header, request, lambda r: forward_and_catch_up(broker, header, r))
