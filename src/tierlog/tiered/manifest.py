"""The segment manifest: the remote copy describes itself.

One small JSON object per uploaded segment, ``<segment>.manifest``, written
after every other object of the segment was uploaded and verified. A segment
without a manifest is an unfinished (or abandoned) upload; a reader with only
storage access lists a partition's segments, their offset ranges, leader epochs
and max timestamps from the manifests alone. Example::

    {"format": 1, "topic": "orders", "partition": 0, "topic_id": "...",
     "segment_id": "...", "start_offset": 0, "end_offset": 999,
     "max_timestamp_ms": 1700000000000, "leader_epochs": [[0, 0], [1, 500]],
     "broker_id": 1, "event_timestamp_ms": 1700000001000,
     "objects": {".log": {"size": 1048576, "crc32c": 123}, ".index": {...}, ...}}

An encrypted upload's manifest (format 2, so a tierlog that cannot decrypt
refuses it instead of serving ciphertext) adds ``"encryption": {"key_id":
"k1"}``: the id of the key its objects' data key is wrapped under
(``tiered.encryption``); sizes and CRC-32Cs are those of the stored, encrypted
objects. The manifest holds no record bytes and is not encrypted, so listing a
store needs no key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tierlog.storage import topic_id_from_str, topic_id_to_str
from tierlog.tiered.encryption import check_key_id, custom_metadata, encrypted_key_id
from tierlog.tiered.object_store import ObjectChecksum
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)

__all__ = ["MANIFEST_FORMAT", "ManifestError", "SegmentManifest"]

MANIFEST_FORMAT = 1
ENCRYPTED_MANIFEST_FORMAT = 2
MANIFEST_MAX_BYTES = 1024 * 1024


class ManifestError(ValueError):
    """A manifest that cannot be read."""


@dataclass(frozen=True, slots=True)
class SegmentManifest:
    metadata: RemoteLogSegmentMetadata          # state COPY_SEGMENT_FINISHED
    objects: dict[str, ObjectChecksum]          # suffix -> size and CRC-32C as stored

    def to_json(self) -> bytes:
        m = self.metadata
        tp = m.topic_id_partition
        key_id = encrypted_key_id(m.custom_metadata)
        doc = {
            "format": MANIFEST_FORMAT if key_id is None else ENCRYPTED_MANIFEST_FORMAT, "topic": tp.topic,
            "partition": tp.partition,
            "topic_id": topic_id_to_str(tp.topic_id), "segment_id": topic_id_to_str(m.segment_id.id),
            "start_offset": m.start_offset, "end_offset": m.end_offset,
            "max_timestamp_ms": m.max_timestamp_ms,
            "leader_epochs": [list(e) for e in m.segment_leader_epochs],
            "broker_id": m.broker_id, "event_timestamp_ms": m.event_timestamp_ms,
            "segment_size_bytes": m.segment_size_in_bytes,
            "objects": {s: {"size": c.size, "crc32c": c.crc32c} for s, c in sorted(self.objects.items())},
        }
        if key_id is not None:
            doc["encryption"] = {"key_id": key_id}
        return json.dumps(doc, indent=1).encode("utf-8")

    @property
    def key_id(self) -> str | None:
        """The id of the key the segment's objects are encrypted under (None: not encrypted)."""
        return encrypted_key_id(self.metadata.custom_metadata)

    @classmethod
    def from_json(cls, data: bytes) -> SegmentManifest:
        if len(data) > MANIFEST_MAX_BYTES:
            raise ManifestError(f"manifest of {len(data)} bytes is larger than {MANIFEST_MAX_BYTES}")
        try:
            doc = json.loads(data)
            if doc["format"] not in (MANIFEST_FORMAT, ENCRYPTED_MANIFEST_FORMAT):
                raise ManifestError(f"unknown manifest format {doc['format']!r}")
            return cls(_metadata(doc), {s: ObjectChecksum(int(c["size"]), int(c["crc32c"]))
                                        for s, c in doc["objects"].items()})
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, ManifestError):
                raise
            raise ManifestError(f"malformed manifest: {exc!r}") from None


def _metadata(doc: dict[str, Any]) -> RemoteLogSegmentMetadata:
    tp = TopicIdPartition(topic_id_from_str(doc["topic_id"]), str(doc["topic"]), int(doc["partition"]))
    return RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId(tp, topic_id_from_str(doc["segment_id"])),
        start_offset=int(doc["start_offset"]), end_offset=int(doc["end_offset"]),
        max_timestamp_ms=int(doc["max_timestamp_ms"]), broker_id=int(doc["broker_id"]),
        event_timestamp_ms=int(doc["event_timestamp_ms"]),
        segment_leader_epochs=tuple((int(e), int(o)) for e, o in doc["leader_epochs"]),
        segment_size_in_bytes=int(doc["segment_size_bytes"]),
        state=RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
        custom_metadata=_encryption(doc),
    )


def _encryption(doc: dict[str, Any]) -> bytes | None:
    """The CustomMetadata an encrypted upload's manifest stands for (None: a plain upload)."""
    if doc["format"] == MANIFEST_FORMAT:
        return None
    return custom_metadata(check_key_id(str(doc["encryption"]["key_id"])))
