"""List what remote storage holds, from the objects alone (no broker, no metadata topic).

A segment is *finished* when its manifest is there and readable; objects of a
segment without one are an unfinished (or abandoned) upload, or a delete that
stopped halfway, and are listed as such.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from tierlog.storage import topic_id_to_str
from tierlog.tiered.layout import (
    MANIFEST_SUFFIX,
    parse_partition_prefix,
    parse_segment_key,
)
from tierlog.tiered.manifest import ManifestError, SegmentManifest
from tierlog.tiered.object_store import ObjectStore, RemoteResourceNotFoundError
from tierlog.tiered.segment_metadata import TopicIdPartition

__all__ = ["PartitionListing", "UnfinishedSegment", "list_partitions"]


@dataclass(frozen=True, slots=True)
class UnfinishedSegment:
    start_offset: int
    segment_uuid: bytes
    suffixes: tuple[str, ...]       # the objects present
    reason: str                     # "no manifest" or why the manifest is unreadable


@dataclass(frozen=True, slots=True)
class PartitionListing:
    topic_id_partition: TopicIdPartition
    segments: tuple[SegmentManifest, ...]          # finished, by start offset
    unfinished: tuple[UnfinishedSegment, ...]

    @property
    def start_offset(self) -> int | None:
        return self.segments[0].metadata.start_offset if self.segments else None

    @property
    def end_offset(self) -> int | None:
        """Highest offset in remote storage (inclusive), None if nothing finished."""
        return max(s.metadata.end_offset for s in self.segments) if self.segments else None

    @property
    def size_bytes(self) -> int:
        return sum(s.metadata.segment_size_in_bytes for s in self.segments)


def list_partitions(store: ObjectStore, topic: str | None = None) -> list[PartitionListing]:
    """Every partition in ``store`` (only ``topic``'s if given), by topic and partition."""
    grouped: dict[str, dict[tuple[int, bytes], list[str]]] = defaultdict(lambda: defaultdict(list))
    for key in store.list_keys(f"{topic}-" if topic else ""):
        prefix, sep, name = key.rpartition("/")
        segment = parse_segment_key(name) if sep else None
        if segment is None or parse_partition_prefix(prefix) is None:
            continue
        grouped[prefix][segment.start_offset, segment.segment_uuid].append(segment.suffix)
    listings = []
    for prefix, segments in grouped.items():
        tp = parse_partition_prefix(prefix)
        assert tp is not None                       # grouped holds parsed prefixes only
        if topic is not None and tp.topic != topic:
            continue
        listings.append(_partition(store, prefix, tp, segments))
    return sorted(listings, key=lambda p: (p.topic_id_partition.topic, p.topic_id_partition.partition))


def _partition(store: ObjectStore, prefix: str, tp: TopicIdPartition,
               segments: dict[tuple[int, bytes], list[str]]) -> PartitionListing:
    finished, unfinished = [], []
    for (start, uuid), suffixes in sorted(segments.items()):
        manifest, reason = None, "no manifest"
        if MANIFEST_SUFFIX in suffixes:
            manifest, reason = _read_manifest(store, prefix, start, uuid)
        if manifest is None:
            unfinished.append(UnfinishedSegment(start, uuid, tuple(sorted(suffixes)), reason))
        else:
            finished.append(manifest)
    return PartitionListing(tp, tuple(finished), tuple(unfinished))


def _read_manifest(store: ObjectStore, prefix: str, start: int, uuid: bytes) -> tuple[SegmentManifest | None, str]:
    key = f"{prefix}/{start:020d}-{topic_id_to_str(uuid)}{MANIFEST_SUFFIX}"
    try:
        return SegmentManifest.from_json(store.get_range(key, 0)), ""
    except RemoteResourceNotFoundError:
        return None, "no manifest"
    except ManifestError as exc:
        return None, str(exc)
