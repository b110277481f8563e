"""The driver's view of remote storage for direct reads: the store, each partition's
readable segments, and offset ranges planned from the store alone when no broker answers.

Everything here reads the store the way ``tierlog remote ls`` does (the segment
manifests, ``tiered.listing``), plus one ``.leader_epoch_checkpoint`` per
partition for the lineage (``remote_planning``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from tierlog.spark.options import OptionError, SourceOptions
from tierlog.spark.planning import OffsetRange
from tierlog.spark.remote_planning import lineage_source, readable_segments
from tierlog.spark.remote_txn import stable_end
from tierlog.storage.producer_snapshot_codec import (
    ProducerSnapshotError,
    decode_snapshot,
)
from tierlog.tiered import (
    EncryptionConfigError,
    EncryptionSettings,
    IndexType,
    ObjectStore,
    PartitionListing,
    RemoteResourceNotFoundError,
    RemoteSegmentStore,
    RemoteStorageConfigError,
    encryption_from_config,
    list_partitions,
    object_store_from_config,
    object_store_from_location,
)
from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata
from tierlog.tiered.upload_epochs import (
    EpochCheckpointError,
    parse_leader_epoch_checkpoint,
)

__all__ = ["StoreSpec", "StoreView", "shared_store", "store_ranges"]

TP = tuple[str, int]


@dataclass(frozen=True)
class StoreSpec:
    """Where a direct read finds the store: a location (``DIR`` / ``s3://BUCKET/PREFIX``, or None when
    the ``rsm.config.storage.*`` settings say it all) and the ``rsm.config.*`` settings. Small and
    picklable: each remote input partition carries it to its executor."""

    location: str | None
    settings: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, opts: SourceOptions) -> StoreSpec:
        """The store an explicit ``remoteStorage`` option names."""
        return cls(opts.remote_storage, opts.remote_settings)

    def open(self) -> ObjectStore:
        try:
            if self.location is None:
                return object_store_from_config(dict(self.settings))
            return object_store_from_location(self.location, dict(self.settings))
        except RemoteStorageConfigError as exc:
            raise OptionError(f"remoteStorage: {exc}") from None

    def encryption(self) -> EncryptionSettings:
        """The keys the ``rsm.config.encryption.*`` settings give (segments encrypted at rest), read where
        this runs: a key file must exist on the driver and every executor, a key variable be set there."""
        try:
            return encryption_from_config(dict(self.settings))
        except EncryptionConfigError as exc:
            raise OptionError(f"remoteStorage: {exc}") from None


@functools.lru_cache(maxsize=8)
def shared_store(spec: StoreSpec) -> ObjectStore:
    """``spec.open()`` once per process: the read tasks a Python worker runs one after another share
    the store (an S3 client costs 0.2-0.4 CPU s to make, more than reading 16 MiB). Stores are
    thread-safe; credentials are the client's (boto3 refreshes the ones that expire)."""
    return spec.open()


@dataclass
class StoreView:
    """The finished segments of the partitions of some topics, as the store lists them."""

    store: ObjectStore
    listings: dict[TP, list[PartitionListing]]
    encryption: EncryptionSettings | None = None

    @classmethod
    def of_topics(cls, store: ObjectStore, topics: list[str],
                  encryption: EncryptionSettings | None = None) -> StoreView:
        listings: dict[TP, list[PartitionListing]] = {}
        for topic in topics:
            for p in list_partitions(store, topic):
                tp = p.topic_id_partition
                listings.setdefault((tp.topic, tp.partition), []).append(p)
        return cls(store, listings, encryption)

    def listing(self, tp: TP, topic_id: bytes | None) -> PartitionListing | None:
        """The partition's listing; of ``topic_id`` when known, else the only one there is."""
        found = self.listings.get(tp, [])
        if topic_id is not None:
            found = [p for p in found if p.topic_id_partition.topic_id == topic_id]
        if len(found) > 1:
            raise OptionError(f"remoteStorage: {tp[0]}-{tp[1]} has segments of {len(found)} topic ids in "
                              f"{self.store.describe()} (a deleted and recreated topic); start a broker so the "
                              "current one is known")
        return found[0] if found else None

    def readable(self, tp: TP, topic_id: bytes | None,
                 highest_tiered: int | None) -> tuple[list[RemoteLogSegmentMetadata], int]:
        """The segments that may be read directly, and the highest offset they may serve (-1: none)."""
        listing = self.listing(tp, topic_id)
        segments = [m.metadata for m in listing.segments] if listing else []
        source = lineage_source(segments, highest_tiered)
        if source is None:
            return [], -1
        highest = source.end_offset if highest_tiered is None else highest_tiered
        kept = readable_segments(segments, self._epochs(source), highest + 1)
        return kept, highest

    def transaction_indexed(self, tp: TP, topic_id: bytes | None,
                            segments: list[RemoteLogSegmentMetadata]) -> tuple[RemoteLogSegmentMetadata, ...]:
        """Those of ``segments`` uploaded with a ``.txnindex`` (their manifest lists one): where a
        read_committed executor finds the aborted transactions, with no GET for the others."""
        listing = self.listing(tp, topic_id)
        indexed = {m.metadata.segment_id for m in listing.segments
                   if IndexType.TRANSACTION.value in m.objects} if listing else set()
        return tuple(s for s in segments if s.segment_id in indexed)

    def stable_end(self, segments: list[RemoteLogSegmentMetadata]) -> int:
        """Where read_committed direct reads of ``segments`` (readable ones) stop: the first offset of
        the oldest transaction open at the end of the one reaching furthest, from the producer snapshot
        uploaded with it (``remote_txn.stable_end``). Without one (a follower rebuilt from remote storage
        uploads some without), nothing is known to be decided: the first offset, so the brokers read."""
        if not segments:
            return -1
        newest = max(segments, key=lambda s: s.end_offset)
        try:
            data = RemoteSegmentStore(self.store, self.encryption).fetch_index(newest, IndexType.PRODUCER_SNAPSHOT)
            return stable_end(decode_snapshot(data), newest.end_offset)
        except RemoteResourceNotFoundError:
            return min(s.start_offset for s in segments)
        except ProducerSnapshotError as exc:
            raise OptionError(f"remoteStorage: the producer snapshot of segment {newest.start_offset} of "
                              f"{newest.topic_id_partition.topic}-{newest.topic_id_partition.partition}: {exc}") from None

    def _epochs(self, segment: RemoteLogSegmentMetadata) -> list[tuple[int, int]]:
        data = RemoteSegmentStore(self.store, self.encryption).fetch_index(segment, IndexType.LEADER_EPOCH)
        try:
            return parse_leader_epoch_checkpoint(data)
        except EpochCheckpointError as exc:
            raise OptionError(f"remoteStorage: segment {segment.start_offset} of "
                              f"{segment.topic_id_partition.topic}-{segment.topic_id_partition.partition}: {exc}") from None


def store_ranges(view: StoreView, opts: SourceOptions) -> list[OffsetRange]:
    """Offset ranges planned from the store alone (no broker answers): earliest and latest are the
    first and last offsets in remote storage (at read_committed, latest is where the oldest
    transaction still open there begins, as the last stable offset is); timestamps need a broker."""
    ranges = []
    for tp in _store_partitions(view, opts):
        listing = view.listing(tp, None)
        first, last = (None, None) if listing is None else (listing.start_offset, listing.end_offset)
        if first is None or last is None:
            continue
        after = last + 1
        if opts.isolation_level:
            after = max(first, min(after, view.stable_end(view.readable(tp, None, None)[0])))
        start = _store_offset(opts.starting, tp, first, after)
        end = _store_offset(opts.ending, tp, first, after)
        ranges.append(OffsetRange(tp[0], tp[1], start, max(start, end)))
    return ranges


def _store_partitions(view: StoreView, opts: SourceOptions) -> list[TP]:
    if opts.assign is not None:
        return list(opts.assign)
    if opts.subscribe is not None:
        return sorted(tp for tp in view.listings if tp[0] in opts.subscribe)
    rx = re.compile(opts.subscribe_pattern or "")
    return sorted(tp for tp in view.listings if rx.fullmatch(tp[0]))


def _store_offset(spec, tp: TP, first: int, after: int) -> int:
    if spec.kind == "earliest":
        return first
    if spec.kind == "latest":
        return after
    if spec.kind == "offsets" and tp in spec.offsets:
        offset = spec.offsets[tp]
        return first if offset == -2 else after if offset == -1 else offset
    raise OptionError(f"{spec.option}: with no broker reachable only earliest, latest and offsets of every "
                      f"partition read can be planned from remote storage ({tp[0]}-{tp[1]})")
