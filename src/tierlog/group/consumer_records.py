"""The KIP-848 (consumer protocol) records of ``__consumer_offsets``, Kafka 4.x layouts.

A record's key starts with an int16 version that names its type; the key's
fields follow (not flexible).  Every value starts with int16 version 0 and is
flexible.  The types Kafka's group coordinator writes for a consumer group:

- key 3 ConsumerGroupMetadata {GroupId}: {Epoch} -- the group epoch;
- key 4 ConsumerGroupPartitionMetadata {GroupId}: {Topics: TopicId, TopicName,
  NumPartitions, PartitionMetadata} -- the subscribed topics' partition counts
  the target assignment was computed from;
- key 5 ConsumerGroupMemberMetadata {GroupId, MemberId}: the member's
  instance id, rack, client id and host, subscription (names, regex),
  rebalance timeout and preferred server assignor;
- key 6 ConsumerGroupTargetAssignmentMetadata {GroupId}: {AssignmentEpoch};
- key 7 ConsumerGroupTargetAssignmentMember {GroupId, MemberId}: {TopicPartitions};
- key 8 ConsumerGroupCurrentMemberAssignment {GroupId, MemberId}: {MemberEpoch,
  PreviousMemberEpoch, State, AssignedPartitions, PartitionsPendingRevocation}.

A null value is a tombstone.  Assignments are {topic id (16 bytes): partitions}.
"""
from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, NamedTuple

from tierlog.protocol.codec import decode_struct, encode_struct
from tierlog.protocol.schema import Field, Struct

__all__ = [
    "CONSUMER_KEY_VERSIONS",
    "ConsumerKey",
    "RecordFamily",
    "decode_consumer_key",
    "decode_consumer_value",
    "encode_consumer_record",
]

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
CONSUMER_KEY_VERSIONS = range(GROUP_METADATA, CURRENT_ASSIGNMENT + 1)
_WITH_MEMBER = {MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT}
_VALUE_VERSION = 0
_VERSION = struct.Struct(">h")


class RecordFamily:
    """The layouts of one group type's record types: keys {GroupId[, MemberId]} after the int16
    type, values int16 version 0 and flexible (shared by the consumer and share groups' records)."""

    def __init__(self, kind: str, values: Mapping[int, Struct], with_member: set[int]):
        self.kind, self.values, self.with_member = kind, values, with_member
        self.keys = {v: self._key(v) for v in values}

    def _key(self, version: int) -> Struct:
        fields = [Field("GroupId", "string", versions=str(version))]
        if version in self.with_member:
            fields.append(Field("MemberId", "string", versions=str(version)))
        return Struct(fields, name=f"{self.kind}Key{version}")

    def encode(self, kind: int, group: str, member: str | None,
               value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
        fields: dict[str, str | None] = {"GroupId": group}
        if kind in self.with_member:
            fields["MemberId"] = member
        kbytes = _VERSION.pack(kind) + bytes(encode_struct(self.keys[kind], kind, False, fields))
        if value is None:
            return kbytes, None
        return kbytes, _VERSION.pack(_VALUE_VERSION) + bytes(encode_struct(self.values[kind], _VALUE_VERSION, True,
                                                                           value))

    def decode_key(self, version: int, buf: bytes) -> tuple[str, str | None]:
        fields, _ = decode_struct(self.keys[version], version, False, buf, 2)
        return fields["GroupId"], fields.get("MemberId")

    def decode_value(self, kind: int, buf: bytes | None) -> dict[str, Any] | None:
        """The value of a record of type ``kind``; None for a tombstone.  ValueError on an unknown version."""
        if buf is None:
            return None
        if len(buf) < 2:
            raise ValueError("a __consumer_offsets value needs a 2-byte version")
        version = _VERSION.unpack_from(buf, 0)[0]
        if version != _VALUE_VERSION:
            raise ValueError(f"unknown value version {version} of {self.kind} record type {kind}")
        fields, _ = decode_struct(self.values[kind], version, True, buf, 2)
        return fields

_TOPIC_PARTITIONS = Struct([
    Field("TopicId", "uuid"),
    Field("Partitions", ["int32"]),
], name="TopicPartitions")

_PARTITION_METADATA = Struct([
    Field("Partition", "int32"),
    Field("Racks", ["string"]),
], name="PartitionMetadata")

_CLASSIC_PROTOCOL = Struct([
    Field("Name", "string"),
    Field("Metadata", "bytes"),
], name="ClassicProtocol")

_CLASSIC_MEMBER_METADATA = Struct([
    Field("SessionTimeoutMs", "int32"),
    Field("SupportedProtocols", [_CLASSIC_PROTOCOL]),
], name="ClassicMemberMetadata")

_VALUES = {
    GROUP_METADATA: Struct([Field("Epoch", "int32")], name="ConsumerGroupMetadataValue"),
    PARTITION_METADATA: Struct([Field("Topics", [Struct([
        Field("TopicId", "uuid"),
        Field("TopicName", "string"),
        Field("NumPartitions", "int32"),
        Field("PartitionMetadata", [_PARTITION_METADATA]),
    ], name="TopicMetadata")])], name="ConsumerGroupPartitionMetadataValue"),
    MEMBER_METADATA: Struct([
        Field("InstanceId", "string", nullable="0+", default=None),
        Field("RackId", "string", nullable="0+", default=None),
        Field("ClientId", "string"),
        Field("ClientHost", "string"),
        Field("SubscribedTopicNames", ["string"]),
        Field("SubscribedTopicRegex", "string", nullable="0+", default=None),
        Field("RebalanceTimeoutMs", "int32", default=-1),
        Field("ServerAssignor", "string", nullable="0+", default=None),
        Field("ClassicMemberMetadata", _CLASSIC_MEMBER_METADATA, nullable="0+", tag=0, default=None),
    ], name="ConsumerGroupMemberMetadataValue"),
    TARGET_METADATA: Struct([Field("AssignmentEpoch", "int32")], name="ConsumerGroupTargetAssignmentMetadataValue"),
    TARGET_MEMBER: Struct([Field("TopicPartitions", [_TOPIC_PARTITIONS])],
                          name="ConsumerGroupTargetAssignmentMemberValue"),
    CURRENT_ASSIGNMENT: Struct([
        Field("MemberEpoch", "int32"),
        Field("PreviousMemberEpoch", "int32"),
        Field("State", "int8"),
        Field("AssignedPartitions", [_TOPIC_PARTITIONS]),
        Field("PartitionsPendingRevocation", [_TOPIC_PARTITIONS]),
    ], name="ConsumerGroupCurrentMemberAssignmentValue"),
}


_FAMILY = RecordFamily("consumer group", _VALUES, _WITH_MEMBER)


class ConsumerKey(NamedTuple):
    type: int               # the key version: GROUP_METADATA ... CURRENT_ASSIGNMENT
    group: str
    member: str | None = None


def encode_consumer_record(key: ConsumerKey, value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of one record; ``value`` None is a tombstone."""
    return _FAMILY.encode(key.type, key.group, key.member, value)


def decode_consumer_key(version: int, buf: bytes) -> ConsumerKey:
    return ConsumerKey(version, *_FAMILY.decode_key(version, buf))


def decode_consumer_value(key: ConsumerKey, buf: bytes | None) -> dict[str, Any] | None:
    """The value under ``key``; None for a tombstone.  Raises ValueError on an unknown value version."""
    return _FAMILY.decode_value(key.type, buf)


def assignment_to_wire(assignment: Mapping[bytes, frozenset[int] | set[int]]) -> list[dict[str, Any]]:
    """{topic id: partitions} -> [{TopicId, Partitions}] (sorted, for stable records)."""
    return [{"TopicId": tid, "Partitions": sorted(ps)} for tid, ps in sorted(assignment.items()) if ps]


def assignment_from_wire(topics: list[dict[str, Any]] | None) -> dict[bytes, frozenset[int]]:
    out: dict[bytes, frozenset[int]] = {}
    for t in topics or ():
        tid = bytes(t["TopicId"])
        out[tid] = out.get(tid, frozenset()) | frozenset(t["Partitions"])
    return {tid: ps for tid, ps in out.items() if ps}
