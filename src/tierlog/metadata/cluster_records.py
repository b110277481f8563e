"""Cluster metadata records: one frozen dataclass per record, Kafka's framing.

Every record of the ``__cluster_metadata`` log (and of its snapshots) is one of
the classes below. Their api keys, versions and wire fields are Kafka's
(``RegisterBrokerRecord`` is key 0, ``PartitionRecord`` key 3, ...); attribute
names are Kafka's field names in snake_case (``BrokerEpoch`` -> ``broker_epoch``,
``EndPoints`` -> ``endpoints``).

Framing, as Kafka writes a metadata record value::

    frame version   unsigned varint  (always 1)
    api key         unsigned varint
    version         unsigned varint
    body            the record in the flexible encoding (compact strings and
                    arrays, a tagged-field section at the end of every struct)

The bodies are encoded by tierlog's one codec engine from the schemas declared
here (``protocol.schema`` DSL), never packed by hand.

tierlog extension (KIP-1303, leader eligibility by local log coverage): Kafka
has no field for a replica's local log coverage, so ``PartitionRecord`` and
``PartitionChangeRecord`` carry a tagged field ``LocalLogCoverage`` (tag
:data:`LOCAL_LOG_COVERAGE_TAG`), an array of ``{BrokerId int32,
LocalLogStartTimestamp int64, LocalLogSizeBytes int64}``. In a PartitionRecord it
is the full per-replica state; in a PartitionChangeRecord null means "no
change" and a list updates the listed brokers' entries (what AlterPartition
reported). A Kafka reader skips the unknown tag.

Second KIP-1303 extension: the broker *event* records (RegisterBrokerRecord,
UnregisterBrokerRecord, FenceBrokerRecord, UnfenceBrokerRecord,
BrokerRegistrationChangeRecord) carry tagged int64 fields
``EligibleLocalLogMs`` / ``EligibleLocalLogBytes`` (tags
:data:`ELIGIBLE_LOCAL_LOG_MS_TAG` / :data:`ELIGIBLE_LOCAL_LOG_BYTES_TAG`): the
writing controller's *static* (server.properties) defaults of
``leader.election.eligible.local.log.ms`` / ``.bytes``, -1 = none.  Replaying
such an event derives elections on every replica (``delta``); a static
default lives in no other record, so the event carries it and every replica
derives the same leader the active controller did.

API::

    encode(record) -> bytes          decode(bytes) -> record
    RECORD_TYPES: api key -> class   UnknownRecordError (unknown api key / version)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import fields as dc_fields
from typing import Any, ClassVar, cast

from tierlog.protocol.codec import Output, decode_struct, encode_struct
from tierlog.protocol.primitives import (
    ZERO_UUID,
    ProtocolError,
    decode_uvarint,
    encode_uvarint,
)
from tierlog.protocol.schema import Field, Struct

from .acl_records import (
    ACL_SCHEMAS,
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
)
from .feature_records import SCHEMAS as _FEATURE_SCHEMAS
from .feature_records import FeatureLevelRecord
from .quota_records import ENTITY_STRUCT as _QUOTA_ENTITY
from .quota_records import SCHEMAS as _QUOTA_SCHEMAS
from .quota_records import ClientQuotaRecord, EntityData
from .scram_records import SCHEMAS as _SCRAM_SCHEMAS
from .scram_records import RemoveUserScramCredentialRecord, UserScramCredentialRecord

__all__ = [
    "CONFIG_RESOURCE_BROKER",
    "CONFIG_RESOURCE_CLIENT_METRICS",
    "CONFIG_RESOURCE_GROUP",
    "CONFIG_RESOURCE_TOPIC",
    "ELIGIBLE_LOCAL_LOG_BYTES_TAG",
    "ELIGIBLE_LOCAL_LOG_MS_TAG",
    "EVENT_RECORDS",
    "FRAME_VERSION",
    "LOCAL_LOG_COVERAGE_TAG",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "RECORD_TYPES",
    "AccessControlEntryRecord",
    "BrokerEndpoint",
    "BrokerFeature",
    "BrokerRegistrationChangeRecord",
    "ConfigRecord",
    "FenceBrokerRecord",
    "MetadataRecord",
    "NoOpRecord",
    "PartitionChangeRecord",
    "PartitionRecord",
    "ProducerIdsRecord",
    "RegisterBrokerRecord",
    "RemoveAccessControlEntryRecord",
    "RemoveTopicRecord",
    "RemoveUserScramCredentialRecord",
    "ReplicaLogCoverage",
    "TopicRecord",
    "UnfenceBrokerRecord",
    "UnknownRecordError",
    "UnregisterBrokerRecord",
    "UserScramCredentialRecord",
    "decode",
    "encode",
]

FRAME_VERSION = 1
#: tag of tierlog's KIP-1303 ``LocalLogCoverage`` in PartitionRecord / PartitionChangeRecord
LOCAL_LOG_COVERAGE_TAG = 1303
#: tags of the controller's static KIP-1303 defaults in broker event records
ELIGIBLE_LOCAL_LOG_MS_TAG = 1304
ELIGIBLE_LOCAL_LOG_BYTES_TAG = 1305

NO_LEADER = -1
NO_LEADER_CHANGE = -2
#: ConfigRecord.resource_type values (Kafka's ConfigResource.Type)
CONFIG_RESOURCE_TOPIC = 2
CONFIG_RESOURCE_BROKER = 4
CONFIG_RESOURCE_GROUP = 32
CONFIG_RESOURCE_CLIENT_METRICS = 16     # KIP-714 client metrics subscriptions


class UnknownRecordError(ProtocolError):
    """A metadata record with an api key or version this build cannot read."""


# -- nested structs --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    name: str
    host: str
    port: int
    security_protocol: int = 0          # 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL


@dataclass(frozen=True, slots=True)
class BrokerFeature:
    name: str
    min_supported_version: int
    max_supported_version: int


@dataclass(frozen=True, slots=True)
class ReplicaLogCoverage:
    """KIP-1303: what one replica's local log covers; -1 = not reported."""

    broker_id: int
    local_log_start_timestamp: int = -1
    local_log_size_bytes: int = -1


_ENDPOINT = Struct([
    Field("Name", "string"), Field("Host", "string"), Field("Port", "uint16"),
    Field("SecurityProtocol", "int16"),
], name="BrokerEndpoint")
_FEATURE = Struct([
    Field("Name", "string"), Field("MinSupportedVersion", "int16"),
    Field("MaxSupportedVersion", "int16"),
], name="BrokerFeature")
_COVERAGE = Struct([
    Field("BrokerId", "int32"),
    Field("LocalLogStartTimestamp", "int64", default=-1),
    Field("LocalLogSizeBytes", "int64", default=-1),
], name="ReplicaLogCoverage")

_NESTED = {id(_ENDPOINT): BrokerEndpoint, id(_FEATURE): BrokerFeature,
           id(_COVERAGE): ReplicaLogCoverage, id(_QUOTA_ENTITY): EntityData}


# -- the records -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    API_KEY: ClassVar[int] = 0
    broker_id: int
    incarnation_id: bytes = ZERO_UUID
    broker_epoch: int = 0
    endpoints: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    log_dirs: tuple[bytes, ...] = ()
    eligible_local_log_ms: int = -1     # tierlog, KIP-1303: the controller's static default
    eligible_local_log_bytes: int = -1  # tierlog, KIP-1303: the controller's static default


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    API_KEY: ClassVar[int] = 1
    broker_id: int
    broker_epoch: int = 0
    eligible_local_log_ms: int = -1     # tierlog, KIP-1303: the controller's static default
    eligible_local_log_bytes: int = -1  # tierlog, KIP-1303: the controller's static default


@dataclass(frozen=True, slots=True)
class TopicRecord:
    API_KEY: ClassVar[int] = 2
    name: str
    topic_id: bytes


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    API_KEY: ClassVar[int] = 3
    partition_id: int
    topic_id: bytes
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: int = 0
    leader_epoch: int = -1
    partition_epoch: int = -1
    directories: tuple[bytes, ...] = ()
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    local_log_coverage: tuple[ReplicaLogCoverage, ...] = ()     # tierlog, KIP-1303


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    API_KEY: ClassVar[int] = 4
    resource_type: int
    resource_name: str
    name: str
    value: str | None = None            # None deletes the key


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """A change of one partition; None / -2 / -1 fields mean "unchanged"."""

    API_KEY: ClassVar[int] = 5
    partition_id: int
    topic_id: bytes
    isr: tuple[int, ...] | None = None
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    leader_recovery_state: int = -1
    directories: tuple[bytes, ...] | None = None
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    local_log_coverage: tuple[ReplicaLogCoverage, ...] | None = None   # tierlog, KIP-1303


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    API_KEY: ClassVar[int] = 7
    id: int
    epoch: int = 0
    eligible_local_log_ms: int = -1     # tierlog, KIP-1303: the controller's static default
    eligible_local_log_bytes: int = -1  # tierlog, KIP-1303: the controller's static default


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    API_KEY: ClassVar[int] = 8
    id: int
    epoch: int = 0
    eligible_local_log_ms: int = -1     # tierlog, KIP-1303: the controller's static default
    eligible_local_log_bytes: int = -1  # tierlog, KIP-1303: the controller's static default


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    API_KEY: ClassVar[int] = 9
    topic_id: bytes


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    API_KEY: ClassVar[int] = 15
    broker_id: int
    broker_epoch: int = -1
    next_producer_id: int = 0


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    """fenced: -1 unfenced, 0 no change, 1 fenced; in_controlled_shutdown: 0/1."""

    API_KEY: ClassVar[int] = 17
    broker_id: int
    broker_epoch: int = 0
    fenced: int = 0
    in_controlled_shutdown: int = 0
    log_dirs: tuple[bytes, ...] = ()
    eligible_local_log_ms: int = -1     # tierlog, KIP-1303: the controller's static default
    eligible_local_log_bytes: int = -1  # tierlog, KIP-1303: the controller's static default


@dataclass(frozen=True, slots=True)
class NoOpRecord:
    API_KEY: ClassVar[int] = 20


MetadataRecord = (RegisterBrokerRecord | UnregisterBrokerRecord | TopicRecord
                  | PartitionRecord | ConfigRecord | PartitionChangeRecord
                  | FenceBrokerRecord | UnfenceBrokerRecord | RemoveTopicRecord
                  | ProducerIdsRecord | BrokerRegistrationChangeRecord | NoOpRecord
                  | UserScramCredentialRecord | RemoveUserScramCredentialRecord
                  | AccessControlEntryRecord | RemoveAccessControlEntryRecord | FeatureLevelRecord
                  | ClientQuotaRecord)


# -- schemas (Kafka's wire layouts; all flexible from version 0) ----------------

_COVERAGE_FIELD: dict[str, Any] = {"tag": LOCAL_LOG_COVERAGE_TAG}
_STATIC_DEFAULTS = [
    Field("EligibleLocalLogMs", "int64", tag=ELIGIBLE_LOCAL_LOG_MS_TAG, default=-1),
    Field("EligibleLocalLogBytes", "int64", tag=ELIGIBLE_LOCAL_LOG_BYTES_TAG, default=-1),
]

_SCHEMAS: dict[Any, tuple[Struct, int, int]] = {   # class -> (schema, min, max version)
    RegisterBrokerRecord: (Struct([
        Field("BrokerId", "int32"),
        Field("IsMigratingZkBroker", "bool", versions="2+", default=False),
        Field("IncarnationId", "uuid"),
        Field("BrokerEpoch", "int64"),
        Field("EndPoints", [_ENDPOINT]),
        Field("Features", [_FEATURE]),
        Field("Rack", "string", nullable="0+", default=None),
        Field("Fenced", "bool", default=True),
        Field("InControlledShutdown", "bool", versions="1+", default=False),
        Field("LogDirs", ["uuid"], versions="3+", tag=0),
        *_STATIC_DEFAULTS,
    ], name="RegisterBrokerRecord"), 0, 3),
    UnregisterBrokerRecord: (Struct([
        Field("BrokerId", "int32"), Field("BrokerEpoch", "int64"), *_STATIC_DEFAULTS,
    ], name="UnregisterBrokerRecord"), 0, 0),
    TopicRecord: (Struct([
        Field("Name", "string"), Field("TopicId", "uuid"),
    ], name="TopicRecord"), 0, 0),
    PartitionRecord: (Struct([
        Field("PartitionId", "int32", default=-1),
        Field("TopicId", "uuid"),
        Field("Replicas", ["int32"]),
        Field("Isr", ["int32"]),
        Field("RemovingReplicas", ["int32"]),
        Field("AddingReplicas", ["int32"]),
        Field("Leader", "int32", default=-1),
        Field("LeaderRecoveryState", "int8", tag=0, default=0),
        Field("LeaderEpoch", "int32", default=-1),
        Field("PartitionEpoch", "int32", default=-1),
        Field("Directories", ["uuid"], versions="1+"),
        Field("EligibleLeaderReplicas", ["int32"], versions="2+", nullable="2+",
              tag=1, default=None),
        Field("LastKnownElr", ["int32"], versions="2+", nullable="2+", tag=2, default=None),
        Field("LocalLogCoverage", [_COVERAGE], **_COVERAGE_FIELD),
    ], name="PartitionRecord"), 0, 2),
    ConfigRecord: (Struct([
        Field("ResourceType", "int8"), Field("ResourceName", "string"),
        Field("Name", "string"), Field("Value", "string", nullable="0+", default=None),
    ], name="ConfigRecord"), 0, 0),
    PartitionChangeRecord: (Struct([
        Field("PartitionId", "int32", default=-1),
        Field("TopicId", "uuid"),
        Field("Isr", ["int32"], nullable="0+", tag=0, default=None),
        Field("Leader", "int32", tag=1, default=NO_LEADER_CHANGE),
        Field("Replicas", ["int32"], nullable="0+", tag=2, default=None),
        Field("RemovingReplicas", ["int32"], nullable="0+", tag=3, default=None),
        Field("AddingReplicas", ["int32"], nullable="0+", tag=4, default=None),
        Field("LeaderRecoveryState", "int8", tag=5, default=-1),
        Field("EligibleLeaderReplicas", ["int32"], versions="2+", nullable="2+",
              tag=6, default=None),
        Field("LastKnownElr", ["int32"], versions="2+", nullable="2+", tag=7, default=None),
        Field("Directories", ["uuid"], versions="1+", nullable="1+", tag=8, default=None),
        Field("LocalLogCoverage", [_COVERAGE], nullable="0+", default=None,
              **_COVERAGE_FIELD),
    ], name="PartitionChangeRecord"), 0, 2),
    FenceBrokerRecord: (Struct([
        Field("Id", "int32"), Field("Epoch", "int64"), *_STATIC_DEFAULTS,
    ], name="FenceBrokerRecord"), 0, 0),
    UnfenceBrokerRecord: (Struct([
        Field("Id", "int32"), Field("Epoch", "int64"), *_STATIC_DEFAULTS,
    ], name="UnfenceBrokerRecord"), 0, 0),
    RemoveTopicRecord: (Struct([Field("TopicId", "uuid")], name="RemoveTopicRecord"), 0, 0),
    ProducerIdsRecord: (Struct([
        Field("BrokerId", "int32"), Field("BrokerEpoch", "int64", default=-1),
        Field("NextProducerId", "int64"),
    ], name="ProducerIdsRecord"), 0, 0),
    BrokerRegistrationChangeRecord: (Struct([
        Field("BrokerId", "int32"), Field("BrokerEpoch", "int64"),
        Field("Fenced", "int8", tag=0, default=0),
        Field("InControlledShutdown", "int8", versions="1+", tag=1, default=0),
        Field("LogDirs", ["uuid"], versions="2+", tag=2),
        *_STATIC_DEFAULTS,
    ], name="BrokerRegistrationChangeRecord"), 0, 2),
    NoOpRecord: (Struct([], name="NoOpRecord"), 0, 0),
    **_SCRAM_SCHEMAS,
    **_FEATURE_SCHEMAS,
    **_QUOTA_SCHEMAS,
}

_SCHEMAS.update(ACL_SCHEMAS)         # KIP-801 ACL records, kept in their own module
RECORD_TYPES: dict[int, type] = {cls.API_KEY: cls for cls in _SCHEMAS}
#: records whose replay may derive elections; they carry the controller's static KIP-1303 defaults
EVENT_RECORDS = (RegisterBrokerRecord, UnregisterBrokerRecord, FenceBrokerRecord, UnfenceBrokerRecord,
                 BrokerRegistrationChangeRecord)

_ATTR_OVERRIDES = {"EndPoints": "endpoints"}


def _snake(name: str) -> str:
    return _ATTR_OVERRIDES.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _Binding:
    """How one dataclass maps onto one Struct: (attr, kafka name, nested class)."""

    __slots__ = ("cls", "items", "struct")

    def __init__(self, cls: type[Any], struct: Struct) -> None:
        self.cls, self.struct = cls, struct
        attrs = {f.name for f in dc_fields(cls)}
        self.items: list[tuple[str, str, type | None, bool]] = []   # attr, name, nested class, array?
        for f in struct.fields:
            attr = _snake(f.name)
            assert attr in attrs, f"{cls.__name__} lacks {attr} for {f.name}"
            element = getattr(f.type, "element", None)
            nested = _NESTED.get(id(element)) if isinstance(element, Struct) else None
            self.items.append((attr, f.name, nested, element is not None))

    def to_dict(self, obj: object) -> dict[str, object]:
        d: dict[str, object] = {}
        for attr, name, nested, _is_array in self.items:
            v = getattr(obj, attr)
            if nested is not None and v is not None:
                v = [_binding(nested).to_dict(x) for x in v]
            d[name] = v
        return d

    def from_dict(self, d: dict[str, Any]) -> object:
        """The dataclass of a decoded struct (its values are the codec's, of every wire type)."""
        kw = {}
        for attr, name, nested, is_array in self.items:
            v = d.get(name, _MISSING)
            if v is _MISSING:
                continue
            if is_array and v is not None:
                if nested is None:
                    v = tuple(v)
                else:
                    nb = _binding(nested)
                    v = tuple([nb.from_dict(x) for x in v])
            kw[attr] = v
        return self.cls(**kw)


_MISSING = object()


_BINDINGS: dict[type, _Binding] = {}


def _binding(cls: type) -> _Binding:
    b = _BINDINGS.get(cls)
    if b is None:
        if cls in _SCHEMAS:
            struct = _SCHEMAS[cls][0]
        else:
            struct = {BrokerEndpoint: _ENDPOINT, BrokerFeature: _FEATURE,
                      ReplicaLogCoverage: _COVERAGE, EntityData: _QUOTA_ENTITY}[cls]
        b = _BINDINGS[cls] = _Binding(cls, struct)
    return b


def _header(api_key: int, version: int) -> bytes:
    return encode_uvarint(FRAME_VERSION) + encode_uvarint(api_key) + encode_uvarint(version)


_HEADERS = {cls: _header(cls.API_KEY, hi) for cls, (_, _, hi) in _SCHEMAS.items()}


def encode(record: MetadataRecord, version: int | None = None) -> bytes:
    """The framed bytes of ``record`` (at its newest version unless given)."""
    cls = type(record)
    spec = _SCHEMAS.get(cls)
    if spec is None:
        raise TypeError(f"not a metadata record: {record!r}")
    struct, lo, hi = spec
    if version is None:
        version, header = hi, _HEADERS[cls]
    else:
        if not lo <= version <= hi:
            raise ValueError(f"{cls.__name__} has versions {lo}-{hi}, not {version}")
        header = _header(cls.API_KEY, version)
    out = Output()
    out += header
    return bytes(encode_struct(struct, version, True, _binding(cls).to_dict(record), out))


def decode(data: bytes | bytearray | memoryview) -> MetadataRecord:
    """The record framed in ``data``; UnknownRecordError / ProtocolError if not one."""
    buf = data if isinstance(data, (bytes, bytearray, memoryview)) else memoryview(data)
    if len(buf) >= 3 and buf[0] == FRAME_VERSION and buf[1] < 0x80 and buf[2] < 0x80:
        api_key, version, pos = buf[1], buf[2], 3          # one-byte varints: the usual case
    else:
        frame, pos = decode_uvarint(buf, 0)
        if frame != FRAME_VERSION:
            raise UnknownRecordError(f"unsupported metadata record frame version {frame}")
        api_key, pos = decode_uvarint(buf, pos)
        version, pos = decode_uvarint(buf, pos)
    spec = _DECODERS.get(api_key)
    if spec is None:
        raise UnknownRecordError(f"unknown metadata record api key {api_key}")
    struct, lo, hi, binding = spec
    if not lo <= version <= hi:
        raise UnknownRecordError(f"{binding.cls.__name__} version {version} not in {lo}-{hi}")
    d, end = decode_struct(struct, version, True, buf, pos)
    if end != len(buf):
        raise ProtocolError(f"{binding.cls.__name__}: {len(buf) - end} trailing bytes")
    return cast("MetadataRecord", binding.from_dict(d))     # _DECODERS holds only record classes


_DECODERS = {cls.API_KEY: (*spec, _binding(cls)) for cls, spec in _SCHEMAS.items()}
