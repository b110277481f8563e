"""AlterConfigs (33), v0-2: the legacy whole-set alter, forwarded to the active controller.

Each topic or broker resource's Configs replace its dynamic config set (keys
not given are deleted); the controller applies IncrementalAlterConfigs'
checks and error codes and writes ConfigRecords (``controller.config_control``).
The broker answers once its own image has caught up with the controller's
high watermark, so DescribeConfigs on this broker shows the new set.  Other
resource types (BROKER_LOGGER, ...) get INVALID_REQUEST from the controller.
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
    from tierlog.protocol.typed.alter_configs import (
        AlterConfigsRequest,
        AlterConfigsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ALTER_CONFIGS, 0, 2


def handle(broker: HandlerContext, header: RequestHeader, request: AlterConfigsRequest) -> Response[AlterConfigsResponse]:
    return authz.forward_configs(broker, header, request, lambda r: forward_and_catch_up(broker, header, r))
