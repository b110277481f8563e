"""The broker's part of topics as Iceberg tables (docs/tables.md): the table writer, built on first use.

``TableCommits.commit`` runs on the copier thread that uploaded a segment of a topic
with ``tierlog.table.mode`` on, before its COPY_SEGMENT_FINISHED. The writer (and
pyiceberg, pyarrow) are loaded at the first such segment, so a broker without the
``table`` extra runs every other topic as before and fails only those uploads, with
one line naming the extra. Settings: ``tierlog.table.catalog.type`` / ``.uri`` and any
other ``tierlog.table.catalog.<property>``, passed to pyiceberg, and ``tierlog.table.namespace``
(``tiered/table/catalog.py``);
on S3 the catalog's file IO gets the store's endpoint, region and path style (``catalog.s3_io``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tierlog.extras import MissingExtraError, require
from tierlog.storage.table_config import TABLE_MODE, TABLE_VALUE_SCHEMA
from tierlog.storage.txn_index import AbortedTxn
from tierlog.tiered import ObjectStore, RemoteLogSegmentMetadata, RemoteStorageError

__all__ = ["CATALOG_PREFIX", "CATALOG_TYPE", "CATALOG_URI", "MAINTENANCE_INTERVAL", "MAINTENANCE_INTERVAL_MIN_MS",
           "NAMESPACE", "SNAPSHOT_RETENTION", "TableCommits"]

CATALOG_PREFIX = "tierlog.table.catalog."            # as tiered/table/catalog.py (not imported: the table extra)
CATALOG_TYPE, CATALOG_URI = CATALOG_PREFIX + "type", CATALOG_PREFIX + "uri"
NAMESPACE = "tierlog.table.namespace"
MAINTENANCE_INTERVAL = "tierlog.table.maintenance.interval.ms"
SNAPSHOT_RETENTION = "tierlog.table.snapshot.retention.ms"
MAINTENANCE_INTERVAL_MIN_MS = 1000      # a smaller setting counts as this: upkeep reads every snapshot's manifests


class TableCommits:
    def __init__(self, store: ObjectStore, broker_config: Mapping[str, Any], staging_dir: Path) -> None:
        self._store, self._config, self._staging = store, dict(broker_config), staging_dir
        self._writer: Any = None
        self._lock = threading.Lock()
        self._interval_ms = max(MAINTENANCE_INTERVAL_MIN_MS, int(self._config.get(MAINTENANCE_INTERVAL, 3_600_000)))
        self._retention_ms = max(0, int(self._config.get(SNAPSHOT_RETENTION, 432_000_000)))
        self._upkept: dict[tuple[str, int], int] = {}     # (topic, partition) -> when its upkeep last ran

    def upkeep_due(self, topic: str, partition: int, now_ms: int) -> bool:
        """Whether the partition's table upkeep is due (once per ``tierlog.table.maintenance.interval.ms``;
        the first pass after a broker starts, or becomes leader, runs it)."""
        return now_ms - self._upkept.get((topic, partition), -self._interval_ms) >= self._interval_ms

    def upkeep(self, topic: str, partition: int, topic_config: Mapping[str, Any], now_ms: int) -> tuple[int, int]:
        """Expire old snapshots (partition 0) and delete the partition's orphan Parquet objects
        (``tiered/table/maintenance.py``); returns (snapshots expired, objects deleted)."""
        self._upkept[(topic, partition)] = now_ms     # a failure too: tried again at the next interval
        writer = self._writer_now()
        try:
            return writer.upkeep(topic, partition, topic_config[TABLE_MODE], topic_config[TABLE_VALUE_SCHEMA], now_ms,
                                self._retention_ms)
        except RemoteStorageError:
            raise
        except Exception as e:
            raise RemoteStorageError(f"{topic}-{partition}: table upkeep: {type(e).__name__}: {e}") from e

    @property
    def stats(self) -> Any:
        """The writer's ``TableStats`` (None before the first table commit)."""
        return None if self._writer is None else self._writer.stats

    def commit(self, metadata: RemoteLogSegmentMetadata, log_path: Path, aborted: Sequence[AbortedTxn],
               topic_config: Mapping[str, Any], behind: threading.Event | None = None,
               handoff: threading.Event | None = None) -> None:
        """Commit the uploaded segment to its table; RemoteStorageError when it cannot. ``behind`` /
        ``handoff``: the partition's pipeline (``TableWriter.commit_segment``)."""
        writer = self._writer_now()     # checks the table extra first
        from tierlog.tiered.table.writer import SegmentCommit
        tip = metadata.segment_id.topic_id_partition
        writer.commit_segment(SegmentCommit.of(tip.topic, tip.partition, metadata.segment_id.id,
                                               metadata.start_offset, metadata.end_offset, log_path, aborted,
                                               topic_config), behind, handoff)

    def covered(self, topic: str, partition: int, topic_config: Mapping[str, Any]) -> int:
        """The last offset the topic's table(s) cover for ``partition`` (-1: none); creates missing tables."""
        writer = self._writer_now()
        try:
            return int(writer.covered(topic, partition, topic_config[TABLE_MODE], topic_config[TABLE_VALUE_SCHEMA]))
        except RemoteStorageError:
            raise
        except Exception as e:
            raise RemoteStorageError(f"{topic}-{partition}: table catalog: {type(e).__name__}: {e}") from e

    def expire(self, topic: str, partition: int, log_start_offset: int, topic_config: Mapping[str, Any]) -> None:
        """Cut the topic's table(s) at the partition's log start offset (remote retention moved it)."""
        writer = self._writer_now()
        try:
            writer.expire(topic, partition, log_start_offset, topic_config[TABLE_MODE], topic_config[TABLE_VALUE_SCHEMA])
        except RemoteStorageError:
            raise
        except Exception as e:
            raise RemoteStorageError(f"{topic}-{partition}: table expiry below {log_start_offset}: "
                                     f"{type(e).__name__}: {e}") from e

    def known_expired(self, topic: str, partition: int) -> int:
        """The log start this broker last cut ``partition``'s table at (-1: none since it started)."""
        stats = self.stats
        return -1 if stats is None else stats.expired.get((topic, partition), -1)

    def known_covered(self, topic: str, partition: int) -> int:
        """The covered offset this broker last committed or read for ``partition`` (-1: none)."""
        stats = self.stats
        return -1 if stats is None else stats.covered.get((topic, partition), -1)

    def staging_path(self, metadata: RemoteLogSegmentMetadata) -> Path:
        """Where a remote segment being backfilled is downloaded to."""
        tip = metadata.segment_id.topic_id_partition
        return self._staging / f"backfill-{tip.topic}-{tip.partition}-{metadata.start_offset:020d}.log"

    def _writer_now(self) -> Any:
        with self._lock:
            if self._writer is None:
                try:
                    require("table", "tierlog.table.mode")
                except MissingExtraError as e:
                    raise RemoteStorageError(str(e)) from None
                from tierlog.tiered.table.catalog import TableCatalog, s3_io, table_settings
                from tierlog.tiered.table.writer import TableWriter
                settings = table_settings(self._store, self._config, s3_io(self._store))
                self._writer = TableWriter(self._store, TableCatalog(settings), self._staging)
            return self._writer

