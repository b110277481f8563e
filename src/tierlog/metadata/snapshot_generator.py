"""SnapshotGenerator: decides when to snapshot the committed metadata image (KIP-630).

Sans-IO: it is fed images (as a loader subscriber) and the time, and writes a
snapshot through an injected ``create_snapshot(end_offset, epoch,
last_contained_ts_ms)`` (the Raft core's; returns a writer with
``append(records: list[bytes])`` and ``freeze()``, or None when that snapshot
already exists).

Triggers (any one):

* ``metadata.log.max.record.bytes.between.snapshots`` (default 20 MiB): bytes of
  records committed since the last snapshot;
* ``controller.snapshot.minimum.records`` (KIP-630; off unless given): records
  committed since the last snapshot;
* ``metadata.log.max.snapshot.interval.ms`` (default 1 h; 0 disables): time since
  the last snapshot, provided at least one record was committed since.

Usage::

    gen = SnapshotGenerator(raft.create_snapshot)
    loader.subscribe(gen.publish)              # image, delta: time = batch time
    ... gen.tick(loader.image, now_ms)         # for the time trigger when idle
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from .delta import MetadataDelta
from .image import MetadataImage
from .snapshot import snapshot_record_bytes

__all__ = ["MAX_BYTES_BETWEEN_SNAPSHOTS", "MAX_SNAPSHOT_INTERVAL_MS", "SnapshotGenerator"]

MAX_BYTES_BETWEEN_SNAPSHOTS = 20 * 1024 * 1024
MAX_SNAPSHOT_INTERVAL_MS = 60 * 60 * 1000
RECORDS_PER_APPEND = 1024


class SnapshotWriter(Protocol):
    """What ``create_snapshot`` returns (the Raft core's writer; ``close`` too when it has one)."""

    def append(self, records: list[bytes]) -> None: ...
    def freeze(self) -> None: ...


#: ``create_snapshot(end_offset, epoch, last_contained_ts_ms)``: a writer, None when that snapshot exists
CreateSnapshot = Callable[[int, int, int], "SnapshotWriter | None"]


class SnapshotGenerator:
    def __init__(self, create_snapshot: CreateSnapshot, *,
                 max_bytes_between_snapshots: int = MAX_BYTES_BETWEEN_SNAPSHOTS,
                 max_interval_ms: int = MAX_SNAPSHOT_INTERVAL_MS,
                 min_records: int | None = None, now_ms: int = 0,
                 records_per_append: int = RECORDS_PER_APPEND) -> None:
        self._create = create_snapshot
        self.max_bytes = max_bytes_between_snapshots
        self.max_interval_ms = max_interval_ms
        self.min_records = min_records
        self.records_per_append = records_per_append
        self.bytes_since = 0
        self.records_since = 0
        self.last_snapshot_ms = now_ms
        self.last_end_offset = -1
        self.snapshots_written = 0

    @classmethod
    def from_config(cls, create_snapshot: CreateSnapshot, config: Mapping[str, int | str],
                    now_ms: int = 0) -> SnapshotGenerator:
        """From Kafka config names (missing keys take the defaults)."""
        mr = config.get("controller.snapshot.minimum.records")
        return cls(create_snapshot,
                   max_bytes_between_snapshots=int(config.get(
                       "metadata.log.max.record.bytes.between.snapshots",
                       MAX_BYTES_BETWEEN_SNAPSHOTS)),
                   max_interval_ms=int(config.get(
                       "metadata.log.max.snapshot.interval.ms", MAX_SNAPSHOT_INTERVAL_MS)),
                   min_records=None if mr is None else int(mr), now_ms=now_ms)

    def publish(self, image: MetadataImage, delta: MetadataDelta, now_ms: int | None = None) -> str | None:
        """Count ``delta``'s records; snapshot ``image`` if a trigger fired (returns why)."""
        self.bytes_since += delta.bytes_replayed
        self.records_since += delta.records_replayed
        if now_ms is None:
            now_ms = image.provenance.last_contained_log_time_ms
        return self.tick(image, now_ms)

    __call__ = publish

    def reason(self, now_ms: int) -> str | None:
        if self.records_since == 0 and self.bytes_since == 0:
            return None
        if self.bytes_since >= self.max_bytes:
            return "bytes"
        if self.min_records is not None and self.records_since >= self.min_records:
            return "records"
        if self.max_interval_ms > 0 and now_ms - self.last_snapshot_ms >= self.max_interval_ms:
            return "interval"
        return None

    def tick(self, image: MetadataImage, now_ms: int) -> str | None:
        why = self.reason(now_ms)
        if why is None or image.provenance.last_contained_offset < 0:
            return None
        self.write(image, now_ms)
        return why

    def on_snapshot_loaded(self, end_offset: int, now_ms: int) -> None:
        """A snapshot was loaded: nothing is pending past it."""
        self.bytes_since = self.records_since = 0
        self.last_snapshot_ms = now_ms
        self.last_end_offset = max(self.last_end_offset, end_offset)

    def write(self, image: MetadataImage, now_ms: int) -> bool:
        """Write ``image`` now; False if that snapshot already exists."""
        prov = image.provenance
        end = prov.end_offset
        self.bytes_since = self.records_since = 0
        self.last_snapshot_ms = now_ms
        if end <= self.last_end_offset:
            return False
        writer = self._create(end, prov.last_contained_epoch, prov.last_contained_log_time_ms)
        self.last_end_offset = end
        if writer is None:
            return False
        chunk: list[bytes] = []
        for data in snapshot_record_bytes(image):
            chunk.append(data)
            if len(chunk) >= self.records_per_append:
                writer.append(chunk)
                chunk = []
        if chunk:
            writer.append(chunk)
        writer.freeze()
        close = getattr(writer, "close", None)
        if close is not None:
            close()
        self.snapshots_written += 1
        return True
