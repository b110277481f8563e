"""Message schemas, one module per Kafka API, and the registry ``APIS``."""

from tierlog.protocol.api import ApiSpec
from tierlog.protocol.messages import (
    api_versions, create_topics, delete_topics, describe_cluster,
    describe_configs, fetch, incremental_alter_configs, list_offsets,
    metadata, offset_for_leader_epoch, produce,
)

__all__ = ["APIS"]

_MODULES = (
    produce, fetch, list_offsets, metadata, api_versions, create_topics,
    delete_topics, offset_for_leader_epoch, describe_configs,
    incremental_alter_configs, describe_cluster,
)

#: every API with schemas, by key
APIS: dict[int, ApiSpec] = {m.SPEC.key: m.SPEC for m in sorted(_MODULES, key=lambda m: m.SPEC.key)}
