"""Records of ``__remote_log_metadata``: Kafka's types, Kafka's framing, our codec.

A record value is framed as Kafka's ``BytesApiMessageSerde`` writes it::

    frame version   unsigned varint  (1)
    api key         unsigned varint  0 RemoteLogSegmentMetadataRecord
                                     1 RemoteLogSegmentMetadataUpdateRecord
                                     2 RemotePartitionDeleteMetadataRecord
    version         unsigned varint  (0)
    message         the record in the flexible encoding

The bodies are declared below with the ``protocol.schema`` DSL from Kafka's
public message specs and encoded by the one codec engine. (Key 3, the
snapshot record, is not written by tierlog and is rejected on read.) Records
with unknown keys, versions or inconsistent contents raise
:class:`RemoteLogMetadataFormatError`.
"""

from __future__ import annotations

from typing import Any

from tierlog.protocol.codec import decode_struct, encode_struct
from tierlog.protocol.primitives import ProtocolError, decode_uvarint, encode_uvarint
from tierlog.protocol.schema import Field, Struct
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
)

__all__ = [
    "FRAME_VERSION",
    "RemoteLogMetadata",
    "RemoteLogMetadataFormatError",
    "decode_remote_log_metadata",
    "encode_remote_log_metadata",
]

FRAME_VERSION = 1
_VERSION = 0

RemoteLogMetadata = RemoteLogSegmentMetadata | RemoteLogSegmentMetadataUpdate | RemotePartitionDeleteMetadata


class RemoteLogMetadataFormatError(ProtocolError):
    """A ``__remote_log_metadata`` value this build cannot read."""


_TOPIC_ID_PARTITION = Struct([
    Field("Name", "string"), Field("Id", "uuid"), Field("Partition", "int32"),
], name="TopicIdPartitionEntry")
_SEGMENT_ID = Struct([
    Field("TopicIdPartition", _TOPIC_ID_PARTITION), Field("Id", "uuid"),
], name="RemoteLogSegmentIdEntry")
_EPOCH_ENTRY = Struct([
    Field("LeaderEpoch", "int32"), Field("Offset", "int64"),
], name="SegmentLeaderEpochEntry")

SEGMENT_METADATA = Struct([
    Field("RemoteLogSegmentId", _SEGMENT_ID),
    Field("StartOffset", "int64"),
    Field("EndOffset", "int64"),
    Field("BrokerId", "int32"),
    Field("MaxTimestampMs", "int64"),
    Field("EventTimestampMs", "int64"),
    Field("SegmentLeaderEpochs", [_EPOCH_ENTRY]),
    Field("SegmentSizeInBytes", "int32"),
    Field("CustomMetadata", "bytes", nullable="0+", default=None),
    Field("RemoteLogSegmentState", "int8"),
], name="RemoteLogSegmentMetadataRecord")
SEGMENT_METADATA_UPDATE = Struct([
    Field("RemoteLogSegmentId", _SEGMENT_ID),
    Field("BrokerId", "int32"),
    Field("EventTimestampMs", "int64"),
    Field("CustomMetadata", "bytes", nullable="0+", default=None),
    Field("RemoteLogSegmentState", "int8"),
], name="RemoteLogSegmentMetadataUpdateRecord")
PARTITION_DELETE = Struct([
    Field("TopicIdPartition", _TOPIC_ID_PARTITION),
    Field("BrokerId", "int32"),
    Field("EventTimestampMs", "int64"),
    Field("RemotePartitionDeleteState", "int8"),
], name="RemotePartitionDeleteMetadataRecord")

_API_KEYS = {RemoteLogSegmentMetadata: 0, RemoteLogSegmentMetadataUpdate: 1,
             RemotePartitionDeleteMetadata: 2}
_STRUCTS = {0: SEGMENT_METADATA, 1: SEGMENT_METADATA_UPDATE, 2: PARTITION_DELETE}


# --- to and from the codec's dicts ------------------------------------------------------------

def _tp_dict(tp: TopicIdPartition) -> dict[str, Any]:
    return {"Name": tp.topic, "Id": tp.topic_id, "Partition": tp.partition}


def _tp(d: dict[str, Any]) -> TopicIdPartition:
    return TopicIdPartition(bytes(d["Id"]), d["Name"], d["Partition"])


def _segment_id_dict(sid: RemoteLogSegmentId) -> dict[str, Any]:
    return {"TopicIdPartition": _tp_dict(sid.topic_id_partition), "Id": sid.id}


def _segment_id(d: dict[str, Any]) -> RemoteLogSegmentId:
    return RemoteLogSegmentId(_tp(d["TopicIdPartition"]), bytes(d["Id"]))


def _to_dict(value: RemoteLogMetadata) -> dict[str, Any]:
    if isinstance(value, RemoteLogSegmentMetadata):
        return {
            "RemoteLogSegmentId": _segment_id_dict(value.segment_id),
            "StartOffset": value.start_offset, "EndOffset": value.end_offset,
            "BrokerId": value.broker_id, "MaxTimestampMs": value.max_timestamp_ms,
            "EventTimestampMs": value.event_timestamp_ms,
            "SegmentLeaderEpochs": [{"LeaderEpoch": e, "Offset": o} for e, o in value.segment_leader_epochs],
            "SegmentSizeInBytes": value.segment_size_in_bytes,
            "CustomMetadata": value.custom_metadata, "RemoteLogSegmentState": int(value.state),
        }
    if isinstance(value, RemoteLogSegmentMetadataUpdate):
        return {
            "RemoteLogSegmentId": _segment_id_dict(value.segment_id), "BrokerId": value.broker_id,
            "EventTimestampMs": value.event_timestamp_ms, "CustomMetadata": value.custom_metadata,
            "RemoteLogSegmentState": int(value.state),
        }
    return {
        "TopicIdPartition": _tp_dict(value.topic_id_partition), "BrokerId": value.broker_id,
        "EventTimestampMs": value.event_timestamp_ms, "RemotePartitionDeleteState": int(value.state),
    }


def _custom(value: bytes | bytearray | memoryview | None) -> bytes | None:
    return None if value is None else bytes(value)


def _from_dict(api_key: int, d: dict[str, Any]) -> RemoteLogMetadata:
    if api_key == 0:
        return RemoteLogSegmentMetadata(
            segment_id=_segment_id(d["RemoteLogSegmentId"]), start_offset=d["StartOffset"],
            end_offset=d["EndOffset"], max_timestamp_ms=d["MaxTimestampMs"], broker_id=d["BrokerId"],
            event_timestamp_ms=d["EventTimestampMs"],
            segment_leader_epochs=tuple((e["LeaderEpoch"], e["Offset"]) for e in d["SegmentLeaderEpochs"]),
            segment_size_in_bytes=d["SegmentSizeInBytes"],
            state=RemoteLogSegmentState(d["RemoteLogSegmentState"]),
            custom_metadata=_custom(d["CustomMetadata"]))
    if api_key == 1:
        return RemoteLogSegmentMetadataUpdate(
            segment_id=_segment_id(d["RemoteLogSegmentId"]), event_timestamp_ms=d["EventTimestampMs"],
            state=RemoteLogSegmentState(d["RemoteLogSegmentState"]), broker_id=d["BrokerId"],
            custom_metadata=_custom(d["CustomMetadata"]))
    return RemotePartitionDeleteMetadata(
        topic_id_partition=_tp(d["TopicIdPartition"]),
        state=RemotePartitionDeleteState(d["RemotePartitionDeleteState"]),
        event_timestamp_ms=d["EventTimestampMs"], broker_id=d["BrokerId"])


# --- framing ----------------------------------------------------------------------------------

def encode_remote_log_metadata(value: RemoteLogMetadata) -> bytes:
    """The record value Kafka's RemoteLogMetadataSerde would write for ``value``."""
    api_key = _API_KEYS[type(value)]
    out = bytearray(encode_uvarint(FRAME_VERSION) + encode_uvarint(api_key) + encode_uvarint(_VERSION))
    out += encode_struct(_STRUCTS[api_key], _VERSION, True, _to_dict(value))
    return bytes(out)


def decode_remote_log_metadata(buf: bytes | bytearray | memoryview) -> RemoteLogMetadata:
    """Decode one record value; RemoteLogMetadataFormatError when it cannot be read."""
    try:
        frame, pos = decode_uvarint(buf, 0)
        api_key, pos = decode_uvarint(buf, pos)
        version, pos = decode_uvarint(buf, pos)
    except (ProtocolError, IndexError) as exc:
        raise RemoteLogMetadataFormatError(f"truncated remote log metadata header: {exc}") from None
    if frame != FRAME_VERSION:
        raise RemoteLogMetadataFormatError(f"unknown frame version {frame}")
    if api_key not in _STRUCTS or version != _VERSION:
        raise RemoteLogMetadataFormatError(f"unknown remote log metadata record: key {api_key} v{version}")
    d, end = decode_struct(_STRUCTS[api_key], version, True, buf, pos)
    if end != len(buf):
        raise RemoteLogMetadataFormatError(f"{len(buf) - end} bytes of garbage after record key {api_key}")
    try:
        return _from_dict(api_key, d)
    except ValueError as exc:       # an unknown state id, inconsistent offsets or epochs
        raise RemoteLogMetadataFormatError(f"bad remote log metadata record key {api_key}: {exc}") from None
