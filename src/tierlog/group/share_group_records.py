"""The share-group (KIP-932) records of ``__consumer_offsets``, Kafka 4.2's layouts.

As the consumer-group records (``consumer_records``): a key is an int16 type followed by
its fields (not flexible), a value is int16 version 0 and flexible fields, a null value a
tombstone.  The types Kafka's group coordinator writes for a share group:

- key 10 ShareGroupMemberMetadata {GroupId, MemberId}: {RackId, ClientId, ClientHost,
  SubscribedTopicNames};
- key 11 ShareGroupMetadata {GroupId}: {Epoch, MetadataHash} -- the group epoch and a hash
  of the subscribed topics' metadata the target was computed from (KIP-1101);
- key 12 ShareGroupTargetAssignmentMetadata {GroupId}: {AssignmentEpoch};
- key 13 ShareGroupTargetAssignmentMember {GroupId, MemberId}: {TopicPartitions};
- key 14 ShareGroupCurrentMemberAssignment {GroupId, MemberId}: {MemberEpoch,
  PreviousMemberEpoch, State, AssignedPartitions};
- key 15 ShareGroupStatePartitionMetadata {GroupId}: {InitializingTopics, InitializedTopics
  (topic id, name, partitions, create timestamp), DeletingTopics (topic id, name)} -- which
  share-partitions have state in the share coordinator.

Key 9 (ShareGroupPartitionMetadata, before KIP-1101's hash) is no longer written; a log that
holds one skips it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from tierlog.protocol.schema import Field, Struct

from .consumer_records import RecordFamily

__all__ = [
    "SHARE_KEY_VERSIONS",
    "ShareGroupKey",
    "decode_share_key",
    "decode_share_value",
    "encode_share_record",
]

OLD_PARTITION_METADATA = 9
MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, STATE_METADATA = range(10, 16)
SHARE_KEY_VERSIONS = range(OLD_PARTITION_METADATA, STATE_METADATA + 1)
_WITH_MEMBER = {MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT}
STABLE = 0                  # MemberState.STABLE: a share member has nothing to revoke

_TOPIC_PARTITIONS = Struct([
    Field("TopicId", "uuid"),
    Field("Partitions", ["int32"]),
], name="TopicPartitions")

_TOPIC_PARTITIONS_INFO = Struct([
    Field("TopicId", "uuid"),
    Field("TopicName", "string"),
    Field("Partitions", ["int32"]),
    Field("CreateTimestamp", "int64", default=-1),
], name="TopicPartitionsInfo")

_TOPIC_INFO = Struct([
    Field("TopicId", "uuid"),
    Field("TopicName", "string"),
], name="TopicInfo")

_VALUES = {
    MEMBER_METADATA: Struct([
        Field("RackId", "string", nullable="0+", default=None),
        Field("ClientId", "string"),
        Field("ClientHost", "string"),
        Field("SubscribedTopicNames", ["string"]),
    ], name="ShareGroupMemberMetadataValue"),
    GROUP_METADATA: Struct([Field("Epoch", "int32"), Field("MetadataHash", "int64", default=0)],
                           name="ShareGroupMetadataValue"),
    TARGET_METADATA: Struct([Field("AssignmentEpoch", "int32")], name="ShareGroupTargetAssignmentMetadataValue"),
    TARGET_MEMBER: Struct([Field("TopicPartitions", [_TOPIC_PARTITIONS])],
                          name="ShareGroupTargetAssignmentMemberValue"),
    CURRENT_ASSIGNMENT: Struct([
        Field("MemberEpoch", "int32"),
        Field("PreviousMemberEpoch", "int32"),
        Field("State", "int8"),
        Field("AssignedPartitions", [_TOPIC_PARTITIONS]),
    ], name="ShareGroupCurrentMemberAssignmentValue"),
    STATE_METADATA: Struct([
        Field("InitializingTopics", [_TOPIC_PARTITIONS_INFO]),
        Field("InitializedTopics", [_TOPIC_PARTITIONS_INFO]),
        Field("DeletingTopics", [_TOPIC_INFO]),
    ], name="ShareGroupStatePartitionMetadataValue"),
}


_FAMILY = RecordFamily("share group", _VALUES, _WITH_MEMBER)


class ShareGroupKey(NamedTuple):
    type: int               # the key version: MEMBER_METADATA ... STATE_METADATA
    group: str
    member: str | None = None


def encode_share_record(key: ShareGroupKey, value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of one record; ``value`` None is a tombstone."""
    return _FAMILY.encode(key.type, key.group, key.member, value)


def decode_share_key(version: int, buf: bytes) -> ShareGroupKey | None:
    """The key of a share-group record; None for the old partition-metadata type (skipped)."""
    if version == OLD_PARTITION_METADATA:
        return None
    return ShareGroupKey(version, *_FAMILY.decode_key(version, buf))


def decode_share_value(key: ShareGroupKey, buf: bytes | None) -> dict[str, Any] | None:
    """The value under ``key``; None for a tombstone.  Raises ValueError on an unknown value version."""
    return _FAMILY.decode_value(key.type, buf)
