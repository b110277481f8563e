"""Payloads of the KRaft control records (KIP-595, KIP-630).

A control record sits in a control batch; its key is ``Version int16 (0),
Type int16`` and its value one of the messages below, all flexible from
version 0 (compact strings and arrays, a tagged-field section per struct).
Each value starts with its own ``Version`` int16, the data version it was
written at; Kafka writes version 0 of all three.

- type 2, LeaderChangeMessage (versions 0-1): the leader writes it when it
  wins an epoch. v1 adds each voter's VoterDirectoryId (KIP-853).
- type 3, SnapshotHeaderRecord (version 0): first record of a snapshot.
- type 4, SnapshotFooterRecord (version 0): last record of a snapshot.

- type 5, KRaftVersionRecord (version 0): the finalized kraft.version (KIP-853).
- type 6, VotersRecord (version 0): the whole voter set, each voter with its
  directory id, endpoints and supported kraft.version range (KIP-853).

Left out: types 0/1 (transaction markers, which have no such payload).
These are not APIs and are not in ``APIS``.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from tierlog.protocol.codec import decode_struct, encode_struct
from tierlog.protocol.primitives import Buffer, ProtocolError
from tierlog.protocol.schema import Field, Struct

__all__ = [
    "CONTROL_RECORDS",
    "KRAFT_VERSION",
    "KRAFT_VERSION_RECORD",
    "KRAFT_VOTERS",
    "LEADER_CHANGE",
    "LEADER_CHANGE_MESSAGE",
    "SNAPSHOT_FOOTER",
    "SNAPSHOT_FOOTER_RECORD",
    "SNAPSHOT_HEADER",
    "SNAPSHOT_HEADER_RECORD",
    "VOTERS_RECORD",
    "ControlRecordSchema",
    "decode_control_key",
    "decode_control_value",
    "decode_leader_change",
    "decode_snapshot_footer",
    "decode_snapshot_header",
    "encode_control_key",
    "encode_control_value",
    "encode_leader_change",
    "encode_snapshot_footer",
    "encode_snapshot_header",
]

#: control record types (the key's Type field)
LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
KRAFT_VOTERS = 6

_KEY = _struct.Struct(">hh")
_CONTROL_KEY_VERSION = 0

_VOTER = Struct([
    Field("VoterId", "int32"),
    Field("VoterDirectoryId", "uuid", versions="1+"),
], name="Voter")

LEADER_CHANGE_MESSAGE = Struct([
    Field("Version", "int16"),
    Field("LeaderId", "int32"),
    Field("Voters", [_VOTER]),
    Field("GrantingVoters", [_VOTER]),
], name="LeaderChangeMessage")

SNAPSHOT_HEADER_RECORD = Struct([
    Field("Version", "int16"),
    Field("LastContainedLogTimestamp", "int64"),
], name="SnapshotHeaderRecord")

SNAPSHOT_FOOTER_RECORD = Struct([
    Field("Version", "int16"),
], name="SnapshotFooterRecord")


KRAFT_VERSION_RECORD = Struct([
    Field("Version", "int16"),
    Field("KRaftVersion", "int16"),
], name="KRaftVersionRecord")

_ENDPOINT = Struct([
    Field("Name", "string"),
    Field("Host", "string"),
    Field("Port", "uint16"),
], name="Endpoint")

_KRAFT_VERSION_FEATURE = Struct([
    Field("MinSupportedVersion", "int16"),
    Field("MaxSupportedVersion", "int16"),
], name="KRaftVersionFeature")

VOTERS_RECORD = Struct([
    Field("Version", "int16"),
    Field("Voters", [Struct([
        Field("VoterId", "int32"),
        Field("VoterUuid", "uuid"),
        Field("Endpoints", [_ENDPOINT]),
        Field("KRaftVersionFeature", _KRAFT_VERSION_FEATURE),
    ], name="Voter")]),
], name="VotersRecord")


class ControlRecordSchema(NamedTuple):
    """One control record type: its payload schema and its data versions."""

    control_type: int
    name: str
    struct: Struct
    max_version: int


#: control type -> payload schema
CONTROL_RECORDS: dict[int, ControlRecordSchema] = {
    LEADER_CHANGE: ControlRecordSchema(LEADER_CHANGE, "LeaderChange", LEADER_CHANGE_MESSAGE, 1),
    SNAPSHOT_HEADER: ControlRecordSchema(SNAPSHOT_HEADER, "SnapshotHeader", SNAPSHOT_HEADER_RECORD, 0),
    SNAPSHOT_FOOTER: ControlRecordSchema(SNAPSHOT_FOOTER, "SnapshotFooter", SNAPSHOT_FOOTER_RECORD, 0),
    KRAFT_VERSION: ControlRecordSchema(KRAFT_VERSION, "KRaftVersion", KRAFT_VERSION_RECORD, 0),
    KRAFT_VOTERS: ControlRecordSchema(KRAFT_VOTERS, "Voters", VOTERS_RECORD, 0),
}


def encode_control_key(control_type: int) -> bytes:
    """The key of a control record: version 0, then the type."""
    return _KEY.pack(_CONTROL_KEY_VERSION, control_type)


def decode_control_key(buf: Buffer) -> int:
    """The control type of a control record key; ProtocolError if malformed."""
    if len(buf) < _KEY.size:
        raise ProtocolError(f"control record key of {len(buf)} bytes")
    control_type: int
    version, control_type = _KEY.unpack_from(buf, 0)
    if version < 0:
        raise ProtocolError(f"control record key version {version}")
    return control_type


def _schema(control_type: int) -> ControlRecordSchema:
    schema = CONTROL_RECORDS.get(control_type)
    if schema is None:
        raise ValueError(f"no payload schema for control record type {control_type}")
    return schema


def encode_control_value(control_type: int, value: Mapping[str, Any]) -> bytes:
    """Encode a payload at the data version in its ``Version`` (default 0)."""
    schema = _schema(control_type)
    version = value.get("Version", 0)
    if not 0 <= version <= schema.max_version:
        raise ValueError(f"{schema.name} version {version} is not in 0-{schema.max_version}")
    return bytes(encode_struct(schema.struct, version, True, {**value, "Version": version}))


def decode_control_value(control_type: int, buf: Buffer) -> dict[str, Any]:
    """Decode a whole payload. Its leading Version picks the layout; a version
    newer than we know is read with our newest layout."""
    schema = _schema(control_type)
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    if len(view) < 2:
        raise ProtocolError(f"{schema.name} payload of {len(view)} bytes")
    (version,) = _struct.unpack_from(">h", view, 0)
    if version < 0:
        raise ProtocolError(f"{schema.name} payload version {version}")
    value, end = decode_struct(schema.struct, min(version, schema.max_version), True, view, 0)
    if end != len(view):
        raise ProtocolError(f"{len(view) - end} bytes after the {schema.name} payload")
    return value


def encode_leader_change(leader_id: int, voters: Iterable[int | Mapping[str, Any]],
                         granting_voters: Iterable[int | Mapping[str, Any]], version: int = 0) -> bytes:
    """A LeaderChangeMessage; ``voters`` and ``granting_voters`` are ids or
    Voter dicts."""
    def as_voters(items: Iterable[int | Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return [v if isinstance(v, dict) else {"VoterId": v} for v in items]
    return encode_control_value(LEADER_CHANGE, {
        "Version": version, "LeaderId": leader_id,
        "Voters": as_voters(voters), "GrantingVoters": as_voters(granting_voters),
    })


def decode_leader_change(buf: Buffer) -> dict[str, Any]:
    return decode_control_value(LEADER_CHANGE, buf)


def encode_snapshot_header(last_contained_log_timestamp: int) -> bytes:
    return encode_control_value(SNAPSHOT_HEADER, {
        "Version": 0, "LastContainedLogTimestamp": last_contained_log_timestamp})


def decode_snapshot_header(buf: Buffer) -> dict[str, Any]:
    return decode_control_value(SNAPSHOT_HEADER, buf)


def encode_snapshot_footer() -> bytes:
    return encode_control_value(SNAPSHOT_FOOTER, {"Version": 0})


def decode_snapshot_footer(buf: Buffer) -> dict[str, Any]:
    return decode_control_value(SNAPSHOT_FOOTER, buf)
