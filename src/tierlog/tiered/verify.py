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
Given a ``RemoteSegmentStore`` with the keys, each object of an encrypted
segment whose size and CRC-32C match is also decrypted whole: a chunk that
fails authentication (or a header the key does not open, when the key opens
others) makes the segment CORRUPT. ``encrypted_key_ids`` names the keys a
listing needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierlog.tiered.batch_check import CorruptRemoteDataError
from tierlog.tiered.encrypted_objects import RemoteEncryptionKeyError
from tierlog.tiered.layout import segment_key
from tierlog.tiered.listing import PartitionListing
from tierlog.tiered.manifest import SegmentManifest
from tierlog.tiered.object_store import ObjectStore, RemoteResourceNotFoundError
from tierlog.tiered.segment_store import RemoteSegmentStore

__all__ = ["SegmentProblem", "encrypted_key_ids", "verify_partition"]

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


def encrypted_key_ids(listings: list[PartitionListing]) -> dict[str, SegmentManifest]:
    """The key ids the finished segments are encrypted under, each with its first segment."""
    found: dict[str, SegmentManifest] = {}
    for listing in listings:
        for manifest in listing.segments:
            if manifest.key_id is not None:
                found.setdefault(manifest.key_id, manifest)
    return found


def verify_partition(store: ObjectStore, listing: PartitionListing,
                     segments: RemoteSegmentStore | None = None) -> list[SegmentProblem]:
    """Every problem of one partition's remote segments, by start offset (``segments``: decrypt
    encrypted ones too)."""
    problems = []
    for manifest in listing.segments:
        found = _check_segment(store, manifest)
        if not found and segments is not None and manifest.key_id is not None:
            found = _check_decryption(segments, manifest)
        problems += found
    problems += _gaps(listing)
    return sorted(problems, key=lambda p: (p.start_offset, p.kind))


def _check_decryption(segments: RemoteSegmentStore, manifest: SegmentManifest) -> list[SegmentProblem]:
    m = manifest.metadata
    tp = m.topic_id_partition
    for suffix in sorted(manifest.objects):
        try:
            segments.authenticate(m, suffix)
        except (CorruptRemoteDataError, RemoteEncryptionKeyError) as exc:
            return [SegmentProblem(tp.topic, tp.partition, m.start_offset, m.end_offset, CORRUPT,
                                   segment_key(m.segment_id, m.start_offset, suffix), _after_key(str(exc)))]
    return []


def _after_key(message: str) -> str:
    """An error about an object without the object's key in front (the table has a column for it)."""
    return message.split(": ", 1)[1] if ": " in message else message


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
