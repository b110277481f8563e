"""Everything tiered storage adds to a broker, built when ``remote.log.storage.system.enable`` is on.

- ``segments``: the RemoteSegmentStore over the store ``rsm.config.storage.*`` describe, encrypting
  uploads and decrypting reads with the ``rsm.config.encryption.*`` keys (encrypted uploads are staged
  in ``<first log dir>/remote-log-upload-staging``);
- ``metadata``: the topic-based RemoteLogMetadataManager (``__remote_log_metadata``);
- ``log_manager``: the RemoteLogManager (uploads, expiration; ReplicaManager's LeadershipListener);
- ``reader``: the RemoteReader serving fetches and ListOffsets below the local log start;
- ``tables``: the table commits of topics with ``tierlog.table.mode`` on (docs/tables.md);
- ``follower_pool``: threads reading remote state for the follower path (``follower_state``).

A bad storage or encryption setting (an unreadable key file, an unset key variable) fails the broker's start with a one-line error
naming the key, and so does a store that cannot be used (``check``: no S3 credentials, no
bucket unless ``rsm.config.storage.s3.create.bucket=true``, access refused, a
directory that cannot be written); an unreachable store does not (uploads
retry, reads get errors).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tierlog.config import ConfigError
from tierlog.net.client import DEFAULT_ROUTE, PeerRoute
from tierlog.tiered import (
    RemoteSegmentStore,
    RemoteStorageConfigError,
    RemoteStorageError,
    object_store_from_config,
)
from tierlog.tiered.encryption_config import (
    EncryptionConfigError,
    encryption_from_config,
)

from ..topic_stats import BrokerTopicStats
from .metadata_manager import RemoteLogMetadataManager
from .reader import RemoteReader
from .remote_log_manager import RemoteLogManager
from .tables import (
    CATALOG_PREFIX,
    CATALOG_TYPE,
    CATALOG_URI,
    MAINTENANCE_INTERVAL,
    NAMESPACE,
    SNAPSHOT_RETENTION,
    TableCommits,
)

__all__ = ["RemoteTier"]


class RemoteTier:
    def __init__(self, config, metadata_view, controller_channel, clock_ms, stats: BrokerTopicStats | None = None,
                 inter_broker: PeerRoute = DEFAULT_ROUTE):
        try:
            store = object_store_from_config(config.prefixed("rsm.config."))
            encryption = encryption_from_config(config.prefixed("rsm.config."))
        except (RemoteStorageConfigError, EncryptionConfigError) as e:
            raise ConfigError(f"remote storage: {e}") from None
        self._store = store
        self.segments = RemoteSegmentStore(store, encryption, Path(config.log_dirs[0]) / "remote-log-upload-staging")
        self.metadata = RemoteLogMetadataManager(config.node_id, config, metadata_view, controller_channel, clock_ms,
                                                 inter_broker)
        self.tables = TableCommits(store, {**config.prefixed(CATALOG_PREFIX),
                                           **{k: config[k] for k in (CATALOG_TYPE, CATALOG_URI, NAMESPACE,
                                                                     MAINTENANCE_INTERVAL, SNAPSHOT_RETENTION)}},
                                   Path(config.log_dirs[0]) / "table-staging")
        self.log_manager = RemoteLogManager(config.node_id, config, self.segments, self.metadata, clock_ms, stats,
                                            self.tables)
        cache_dir = config.prefixed("rsm.config.").get("rsm.config.fetch.chunk.cache.path") or \
            str(Path(config.log_dirs[0]) / "remote-log-chunk-cache")
        self.reader = RemoteReader(config, self.segments, self.metadata, Path(cache_dir), stats)
        self.follower_pool = ThreadPoolExecutor(int(config["remote.log.manager.follower.thread.pool.size"]),
                                                thread_name_prefix="rlm-follower")

    async def check(self) -> None:
        """Refuse a store that cannot be used (ConfigError, one line), off the event loop."""
        try:
            await asyncio.to_thread(self._store.check)
        except RemoteStorageError as e:
            raise ConfigError(f"remote storage {self._store.describe()}: {e}") from None

    async def start(self) -> None:
        await self.reader.start()

    async def close(self) -> None:
        await self.log_manager.close()
        await self.reader.close()
        await self.metadata.close()
        self.follower_pool.shutdown(wait=False, cancel_futures=True)
