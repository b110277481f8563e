"""Object names in remote storage (Kafka's LocalTieredStorage layout).

Per partition a prefix ``<topic>-<partition>-<topicId>/``; per segment upload
``<20-digit start offset>-<segment id>`` followed by one suffix per object:

    .log                      the segment's bytes, unchanged
    .index                    offset index (8-byte entries)
    .timeindex                time index (12-byte entries)
    .snapshot                 producer state at the next segment's base offset
    .txnindex                 aborted transactions whose ABORT marker is in the segment
                              (only when it has one: most segments have none)
    .leader_epoch_checkpoint  epoch history up to the next segment's base offset
    .manifest                 JSON description of the segment, written last

Topic and segment ids are Kafka's Uuid strings (URL-safe base64, no padding,
22 characters).
"""

from __future__ import annotations

import re
from enum import Enum
from typing import NamedTuple

from tierlog.storage import topic_id_from_str, topic_id_to_str
from tierlog.tiered.segment_metadata import RemoteLogSegmentId, TopicIdPartition

__all__ = [
    "MANIFEST_SUFFIX",
    "IndexType",
    "SegmentName",
    "parse_partition_prefix",
    "parse_segment_key",
    "partition_prefix",
    "segment_key",
]

LOG_SUFFIX = ".log"
MANIFEST_SUFFIX = ".manifest"


class IndexType(Enum):
    """Kafka's ``RemoteStorageManager.IndexType``, with its suffix (LocalTieredStorage's)."""

    OFFSET = ".index"
    TIMESTAMP = ".timeindex"
    PRODUCER_SNAPSHOT = ".snapshot"
    TRANSACTION = ".txnindex"
    LEADER_EPOCH = ".leader_epoch_checkpoint"


_UUID = r"[A-Za-z0-9_-]{22}"
_PARTITION_PREFIX = re.compile(rf"^(.+)-(\d+)-({_UUID})$")
_SEGMENT_KEY = re.compile(rf"^(\d{{20}})-({_UUID})(\.[a-z_]+)$")


def partition_prefix(tp: TopicIdPartition) -> str:
    """``<topic>-<partition>-<topicId>/``."""
    return f"{tp.topic}-{tp.partition}-{topic_id_to_str(tp.topic_id)}/"


def parse_partition_prefix(name: str) -> TopicIdPartition | None:
    """The partition of a prefix (with or without its trailing ``/``), else None."""
    match = _PARTITION_PREFIX.match(name.rstrip("/"))
    if match is None:
        return None
    return TopicIdPartition(topic_id_from_str(match.group(3)), match.group(1), int(match.group(2)))


def segment_key(segment_id: RemoteLogSegmentId, start_offset: int, suffix: str) -> str:
    """``<partition prefix><20-digit start offset>-<segment id><suffix>``."""
    return (f"{partition_prefix(segment_id.topic_id_partition)}"
            f"{start_offset:020d}-{topic_id_to_str(segment_id.id)}{suffix}")


class SegmentName(NamedTuple):
    start_offset: int
    segment_uuid: bytes
    suffix: str


def parse_segment_key(name: str) -> SegmentName | None:
    """The parts of a segment object's name (the part after the partition prefix)."""
    match = _SEGMENT_KEY.match(name)
    if match is None:
        return None
    return SegmentName(int(match.group(1)), topic_id_from_str(match.group(2)), match.group(3))
