"""Tiered storage in the broker (KIP-405): the shells around ``tierlog.tiered``'s rules.

- ``tier.RemoteTier``: what the node builds when tiering is on (``Broker.remote``);
- ``metadata_manager`` (+ ``metadata_position``): the topic-based remote log metadata;
- ``log_manager`` (+ ``copy_task``, ``expiration_task``, ``rate_limit``): uploads and expiration;
- ``reader``: fetches and ListOffsets served from remote storage, through ``tiered.chunk_cache``.
"""
