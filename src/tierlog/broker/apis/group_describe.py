"""One group of a DescribeGroups or ConsumerGroupDescribe request: DESCRIBE on the group
(else GROUP_AUTHORIZATION_FAILED, as Kafka's KafkaApis answers per group), then the read on
the group's coordinator shard (or its error answer)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

__all__ = ["describe_group"]

_Group = TypeVar("_Group")      # the described group of DescribeGroups or ConsumerGroupDescribe


def describe_group(broker: HandlerContext, header: RequestHeader, group_id: str,
                   read: Callable[[Any, str], _Group], error: Callable[[str, int], _Group]) -> _Group:
    """``read(shard, group_id)`` on the group's shard; ``error(group_id, code)`` when refused or
    when the shard cannot answer (not the coordinator, loading)."""
    if not authz.group(broker, header, authz.Op.DESCRIBE, group_id):
        return error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return broker.groups.read(group_id, lambda shard: read(shard, group_id), lambda code: error(group_id, code))
