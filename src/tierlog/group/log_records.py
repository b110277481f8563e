"""The records of ``__consumer_offsets`` (Kafka's group coordinator layouts).

Every record's key and value start with an int16 version, then the struct of
that version:

- key version 0 or 1: an offset commit, :data:`OFFSET_COMMIT_KEY` {group,
  topic, partition}; its value :data:`OFFSET_COMMIT_VALUE` v0-v4 (v1 carries
  expireTimestamp, v3 leaderEpoch, v4 is the first flexible version);
- key version 2: a classic group's metadata, :data:`GROUP_METADATA_KEY`
  {group}; its value :data:`GROUP_METADATA_VALUE` v0-v4 (protocol type,
  generation, protocol, leader, members with subscription and assignment).

A null value is a tombstone: the offset or the group is deleted.  Key
versions 3-8 belong to KIP-848 groups (``consumer_records.py``); those and
any later ones (share and streams groups) are not read here: :func:`decode_key`
answers None for them, so a log written by a newer coordinator still loads.
We write offset values v3 (v1 when the commit carries an expire timestamp) and
group values v3, the versions Kafka writes for these fields.
"""
from __future__ import annotations

import struct
from typing import Any, NamedTuple

from tierlog.protocol.codec import decode_struct, encode_struct
from tierlog.protocol.schema import Field, Struct

__all__ = [
    "GROUP_METADATA_KEY",
    "GROUP_METADATA_VALUE",
    "OFFSET_COMMIT_KEY",
    "OFFSET_COMMIT_VALUE",
    "GroupKey",
    "OffsetKey",
    "decode_key",
    "decode_value",
    "group_metadata_record",
    "offset_commit_record",
]

OFFSET_COMMIT_KEY = Struct([
    Field("group", "string", versions="0-1"),
    Field("topic", "string", versions="0-1"),
    Field("partition", "int32", versions="0-1"),
], name="OffsetCommitKey")

OFFSET_COMMIT_VALUE = Struct([
    Field("offset", "int64"),
    Field("leaderEpoch", "int32", versions="3+", default=-1),
    Field("metadata", "string"),
    Field("commitTimestamp", "int64"),
    Field("expireTimestamp", "int64", versions="1", default=-1),
], name="OffsetCommitValue")

GROUP_METADATA_KEY = Struct([
    Field("group", "string", versions="2"),
], name="GroupMetadataKey")

_MEMBER_METADATA = Struct([
    Field("memberId", "string"),
    Field("groupInstanceId", "string", versions="3+", nullable="3+", default=None),
    Field("clientId", "string"),
    Field("clientHost", "string"),
    Field("rebalanceTimeout", "int32", versions="1+", default=-1),
    Field("sessionTimeout", "int32"),
    Field("subscription", "bytes"),
    Field("assignment", "bytes"),
], name="MemberMetadata")

GROUP_METADATA_VALUE = Struct([
    Field("protocolType", "string"),
    Field("generation", "int32"),
    Field("protocol", "string", nullable="0+"),
    Field("leader", "string", nullable="0+"),
    Field("currentStateTimestamp", "int64", versions="2+", default=-1),
    Field("members", [_MEMBER_METADATA]),
], name="GroupMetadataValue")

_VERSION = struct.Struct(">h")
_VALUE_FLEXIBLE_FROM = 4
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3
_VALUE_VERSIONS = range(5)


class OffsetKey(NamedTuple):
    group: str
    topic: str
    partition: int


class GroupKey(NamedTuple):
    group: str


def _encode(schema: Struct, version: int, value: dict[str, Any], flexible: bool = False) -> bytes:
    return _VERSION.pack(version) + bytes(encode_struct(schema, version, flexible, value))


def encode_offset_key(key: OffsetKey) -> bytes:
    return _encode(OFFSET_COMMIT_KEY, 1, key._asdict())


def encode_group_key(key: GroupKey) -> bytes:
    return _encode(GROUP_METADATA_KEY, 2, key._asdict())


def offset_commit_record(key: OffsetKey, value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    """(key, value) bytes; ``value`` None is the tombstone of the offset."""
    if value is None:
        return encode_offset_key(key), None
    version = OFFSET_VALUE_VERSION if value.get("expireTimestamp", -1) == -1 else OFFSET_VALUE_VERSION_WITH_EXPIRY
    if version != OFFSET_VALUE_VERSION_WITH_EXPIRY:
        value = {k: v for k, v in value.items() if k != "expireTimestamp"}
    return encode_offset_key(key), _encode(OFFSET_COMMIT_VALUE, version, value)


def group_metadata_record(key: GroupKey, value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    """(key, value) bytes; ``value`` None is the tombstone of the group."""
    if value is None:
        return encode_group_key(key), None
    return encode_group_key(key), _encode(GROUP_METADATA_VALUE, GROUP_VALUE_VERSION, value)


def decode_key(buf: bytes) -> OffsetKey | GroupKey | None:
    """The key of a record; None for record types this coordinator does not read
    (KIP-848 and share groups).  Raises ValueError on a malformed key."""
    version = _read_version(buf)
    if version in (0, 1):
        fields, _ = decode_struct(OFFSET_COMMIT_KEY, version, False, buf, 2)
        return OffsetKey(fields["group"], fields["topic"], fields["partition"])
    if version == 2:
        fields, _ = decode_struct(GROUP_METADATA_KEY, version, False, buf, 2)
        return GroupKey(fields["group"])
    return None


def decode_value(key: OffsetKey | GroupKey, buf: bytes | None) -> dict[str, Any] | None:
    """The value of a record under ``key``; None for a tombstone."""
    if buf is None:
        return None
    version = _read_version(buf)
    if version not in _VALUE_VERSIONS:
        raise ValueError(f"unknown value version {version} of {type(key).__name__}")
    schema = OFFSET_COMMIT_VALUE if isinstance(key, OffsetKey) else GROUP_METADATA_VALUE
    fields, _ = decode_struct(schema, version, version >= _VALUE_FLEXIBLE_FROM, buf, 2)
    return fields


def _read_version(buf: bytes | None) -> int:
    if buf is None or len(buf) < 2:
        raise ValueError("a __consumer_offsets key or value needs a 2-byte version")
    version: int = _VERSION.unpack_from(buf, 0)[0]
    return version
