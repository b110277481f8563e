"""One module per Kafka API (``api_<key>_<name>``); each declares its version range.

``REGISTRY`` maps API key -> module; the ApiVersions answer is built from it.
"""
from . import (api_00_produce, api_01_fetch, api_02_list_offsets, api_03_metadata,
               api_18_api_versions, api_19_create_topics, api_20_delete_topics,
               api_22_init_producer_id, api_23_offset_for_leader_epoch, api_32_describe_configs,
               api_44_incremental_alter_configs, api_55_describe_quorum, api_60_describe_cluster)

REGISTRY = {m.API_KEY: m for m in (
    api_00_produce, api_01_fetch, api_02_list_offsets, api_03_metadata, api_18_api_versions,
    api_19_create_topics, api_20_delete_topics, api_22_init_producer_id, api_23_offset_for_leader_epoch,
    api_32_describe_configs, api_44_incremental_alter_configs, api_55_describe_quorum, api_60_describe_cluster)}

__all__ = ["REGISTRY"]
