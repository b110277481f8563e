"""Message schemas, one module per Kafka API, and the registry ``APIS``."""

from tierlog.protocol.api import ApiSpec
from tierlog.protocol.messages import (
    api_versions, create_topics, delete_topics, describe_cluster,
    describe_configs, describe_groups, fetch, find_coordinator, heartbeat,
    incremental_alter_configs, init_producer_id, join_group, leave_group,
    list_groups, list_offsets, metadata, offset_commit, offset_fetch,
    offset_for_leader_epoch, produce, sync_group,
)

__all__ = ["APIS"]

_MODULES = (
    produce, fetch, list_offsets, metadata, offset_commit, offset_fetch,
    find_coordinator, join_group, heartbeat, leave_group, sync_group,
    describe_groups, list_groups, api_versions, create_topics, delete_topics,
    init_producer_id, offset_for_leader_epoch, describe_configs,
    incremental_alter_configs, describe_cluster,
)

#: every API with schemas, by key
APIS: dict[int, ApiSpec] = {
    m.SPEC.key: m.SPEC for m in sorted(_MODULES, key=lambda m: m.SPEC.key)
}
