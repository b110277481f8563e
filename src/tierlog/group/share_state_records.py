"""The records of ``__share_group_state`` (KIP-932; Kafka 4.2's share coordinator layouts).

A record's key starts with an int16 naming its type, then {GroupId string, TopicId uuid,
Partition int32} (not flexible); every value starts with int16 version 0 and is flexible:

- type 0 ShareSnapshot: the whole state of one share-partition -- SnapshotEpoch, StateEpoch,
  LeaderEpoch, StartOffset, DeliveryCompleteCount (tagged 0, KIP-1226, default -1),
  CreateTimestamp, WriteTimestamp, StateBatches;
- type 1 ShareUpdate: what one write changed since -- SnapshotEpoch, LeaderEpoch, StartOffset
  (-1: unchanged), DeliveryCompleteCount (tagged 0), StateBatches.

A StateBatch is {FirstOffset, LastOffset, DeliveryState (0 available, 2 acknowledged,
4 archived), DeliveryCount}: ``SharePartition.snapshot`` / ``take_update`` make exactly these.
A null value is a tombstone (the share-partition's state was deleted).  A key of another type
is not ours to read: ``decode_key`` answers None for it.
"""
from __future__ import annotations

import struct
from typing import Any, NamedTuple

from tierlog.protocol.codec import decode_struct, encode_struct
from tierlog.protocol.schema import Field, Struct

__all__ = ["SHARE_SNAPSHOT", "SHARE_UPDATE", "SharePartitionKey", "decode_key", "decode_value", "encode_record"]

SHARE_SNAPSHOT, SHARE_UPDATE = 0, 1
_VALUE_VERSION = 0
_VERSION = struct.Struct(">h")
NO_COUNT = -1

_KEY = Struct([
    Field("GroupId", "string", versions="0"),
    Field("TopicId", "uuid", versions="0"),
    Field("Partition", "int32", versions="0"),
], name="SharePartitionKey")

_STATE_BATCH = Struct([
    Field("FirstOffset", "int64"),
    Field("LastOffset", "int64"),
    Field("DeliveryState", "int8"),
    Field("DeliveryCount", "int16"),
], name="StateBatch")

_VALUES = {
    SHARE_SNAPSHOT: Struct([
        Field("SnapshotEpoch", "int32"),
        Field("StateEpoch", "int32"),
        Field("LeaderEpoch", "int32"),
        Field("StartOffset", "int64"),
        Field("DeliveryCompleteCount", "int32", tag=0, default=NO_COUNT),
        Field("CreateTimestamp", "int64", default=-1),
        Field("WriteTimestamp", "int64", default=-1),
        Field("StateBatches", [_STATE_BATCH]),
    ], name="ShareSnapshotValue"),
    SHARE_UPDATE: Struct([
        Field("SnapshotEpoch", "int32"),
        Field("LeaderEpoch", "int32"),
        Field("StartOffset", "int64"),
        Field("DeliveryCompleteCount", "int32", tag=0, default=NO_COUNT),
        Field("StateBatches", [_STATE_BATCH]),
    ], name="ShareUpdateValue"),
}


class SharePartitionKey(NamedTuple):
    """One share-partition: a share group reading one topic partition (Kafka's SharePartitionKey)."""
    group: str
    topic_id: bytes             # 16 bytes
    partition: int


def encode_record(type_: int, key: SharePartitionKey, value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of one record of ``type_`` (SHARE_SNAPSHOT / SHARE_UPDATE); None: a tombstone."""
    fields = {"GroupId": key.group, "TopicId": key.topic_id, "Partition": key.partition}
    kbytes = _VERSION.pack(type_) + bytes(encode_struct(_KEY, 0, False, fields))
    if value is None:
        return kbytes, None
    return kbytes, _VERSION.pack(_VALUE_VERSION) + bytes(encode_struct(_VALUES[type_], _VALUE_VERSION, True, value))


def decode_key(buf: bytes) -> tuple[int, SharePartitionKey] | None:
    """(type, key) of a record's key; None for a type this module does not know."""
    if len(buf) < 2:
        raise ValueError("a __share_group_state key needs a 2-byte type")
    type_ = _VERSION.unpack_from(buf, 0)[0]
    if type_ not in _VALUES:
        return None
    fields, _ = decode_struct(_KEY, 0, False, buf, 2)
    return type_, SharePartitionKey(fields["GroupId"], fields["TopicId"], fields["Partition"])


def decode_value(type_: int, buf: bytes | None) -> dict[str, Any] | None:
    """The value of a record of ``type_``; None for a tombstone.  ValueError on an unknown version."""
    if buf is None:
        return None
    if len(buf) < 2:
        raise ValueError("a __share_group_state value needs a 2-byte version")
    version = _VERSION.unpack_from(buf, 0)[0]
    if version != _VALUE_VERSION:
        raise ValueError(f"unknown value version {version} of share state record type {type_}")
    fields, _ = decode_struct(_VALUES[type_], version, True, buf, 2)
    return fields
