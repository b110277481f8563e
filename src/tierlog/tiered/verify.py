"""Check what remote storage holds against its own manifests, with no broker
(``tierlog remote verify``).

For every finished segment (manifest present) each object the manifest names
must exist with the size and CRC-32C the manifest recorded at upload: a missing
object makes the segment MISSING, a different one CORRUPT.  Between the
finished segments of a partition, offsets that no segment holds are a GAP (a
segment deleted whole, manifest included, behind the broker's back).  A gap
before the first or after the last remote segment cannot be told from
retention or from segments not uploaded yet, so it is not reported.  Unfinished
segments (no manifest: an upload under way or a delete that stopped halfway)
are not data loss and are not reported.

The checks read each object once (the store computes size and CRC-32C).
"""

from __future__ import annotations

from dataclasses import dataclass

from tierlog.tiered.layout import segment_key
from tierlog.tiered.listing import PartitionListing
from tierlog.tiered.manifest import SegmentManifest
from tierlog.tiered.object_store import ObjectStore, RemoteResourceNotFoundError

__all__ = ["SegmentProblem", "verify_partition"]

MISSING, CORRUPT, GAP = "missing", "corrupt", "gap"


@dataclass(frozen=True, slots=True)
class SegmentProblem:
    topic: str
    partition: int
    start_offset: int
    end_offset: int             # inclusive
    kind: str                   # MISSING, CORRUPT or GAP
    key: str | None             # the object at fault (None for a gap)
    detail: str


def verify_partition(store: ObjectStore, listing: PartitionListing) -> list[SegmentProblem]:
    """Every problem of one partition's remote segments, by start offset."""
    problems = []
    for manifest in listing.segments:
        problems += _check_segment(store, manifest)
    problems += _gaps(listing)
    return sorted(problems, key=lambda p: (p.start_offset, p.kind))


def _check_segment(store: ObjectStore, manifest: SegmentManifest) -> list[SegmentProblem]:
    m = manifest.metadata
    tp = m.topic_id_partition
    out = []
    for suffix, expected in sorted(manifest.objects.items()):
        key = segment_key(m.segment_id, m.start_offset, suffix)
        try:
            stored = store.checksum(key)
        except RemoteResourceNotFoundError:
            out.append(SegmentProblem(tp.topic, tp.partition, m.start_offset, m.end_offset, MISSING, key,
                                      "object not in the store"))
            continue
        if stored != expected:
            out.append(SegmentProblem(tp.topic, tp.partition, m.start_offset, m.end_offset, CORRUPT, key,
                                      f"{stored.size} bytes crc32c {stored.crc32c:#010x}, uploaded as "
                                      f"{expected.size} bytes crc32c {expected.crc32c:#010x}"))
    return out


def _gaps(listing: PartitionListing) -> list[SegmentProblem]:
    tp = listing.topic_id_partition
    ranges = sorted((s.metadata.start_offset, s.metadata.end_offset) for s in listing.segments)
    out = []
    covered = None                  # highest offset held by the segments so far
    for start, end in ranges:
        if covered is not None and start > covered + 1:
            out.append(SegmentProblem(tp.topic, tp.partition, covered + 1, start - 1, GAP, None,
                                      "no remote segment holds these offsets"))
        covered = end if covered is None else max(covered, end)
    return out
