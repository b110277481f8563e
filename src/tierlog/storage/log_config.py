"""Topic-level log configs: Kafka's names, types, defaults (Kafka 4.x) and validation.

``TOPIC_CONFIGS`` lists every topic config Kafka 4.x defines (DescribeConfigs lists
them, with the broker property each one defaults from as its synonym).
``internal.segment.bytes`` is Kafka's internal test override for segment.bytes
(whose minimum is 1 MiB since 4.0); it is accepted but not listed.

The compaction settings (min.cleanable.dirty.ratio, delete.retention.ms,
min/max.compaction.lag.ms) drive the log cleaner (``cleaner_rules``). Known but not
acted on by this storage layer: preallocate (segment
files are always plain append-only), compression.type other than ``producer`` (no
broker-side recompression), the replication throttles and min.insync.replicas /
unclean.leader.election.enable (those belong to the replication layer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from tierlog.storage.table_config import (
    MODES,
    OFF,
    TABLE_KEEP_EXPIRED,
    TABLE_MODE,
    TABLE_VALUE_SCHEMA,
    check_table_config,
)

__all__ = [
    "INTERNAL_SEGMENT_BYTES",
    "LONG_MAX",
    "TOPIC_CONFIGS",
    "ConfigType",
    "LogConfig",
    "TopicConfigDef",
]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"


class ConfigType:
    """Kafka ConfigDef types, spelled in lower case like ``tierlog.config``."""

    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    LIST = "list"


@dataclass(frozen=True)
class TopicConfigDef:
    """One topic config: Kafka name, type, default, validator, broker synonym."""

    name: str
    type: str
    default: Any
    synonym: str  # the broker property supplying the default
    check: Callable[[Any], str | None] | None = None  # returns a problem, or None
    doc: str = ""


def _at_least(low: float) -> Callable[[Any], str | None]:
    return lambda v: None if v >= low else f"must be at least {low}"


def _between(low: float, high: float) -> Callable[[Any], str | None]:
    return lambda v: None if low <= v <= high else f"must be in [{low}, {high}]"


def _one_of(*allowed: str) -> Callable[[Any], str | None]:
    return lambda v: None if v in allowed else f"must be one of {', '.join(allowed)}"


def _all_in(*allowed: str) -> Callable[[Any], str | None]:
    def check(values: tuple[str, ...]) -> str | None:
        bad = [v for v in values if v not in allowed]
        return f"unknown value(s) {bad}; allowed {', '.join(allowed)}" if bad else None

    return check


def _gzip_level(value: int) -> str | None:
    return None if value == -1 or 1 <= value <= 9 else "must be -1 or in [1, 9]"


def _replica_list(values: tuple[str, ...]) -> str | None:
    if values == ("*",):
        return None
    for item in values:
        parts = item.split(":")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            return "must be '*' or a list of <partition>:<broker id>"
    return None


_I, _L, _D, _B, _S, _LI = (
    ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE, ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.LIST,
)
_DAY_MS = 24 * 60 * 60 * 1000

_DEFS = [
    TopicConfigDef("cleanup.policy", _LI, ("delete",), "log.cleanup.policy", _all_in("compact", "delete")),
    TopicConfigDef("compression.gzip.level", _I, -1, "compression.gzip.level", _gzip_level),
    TopicConfigDef("compression.lz4.level", _I, 9, "compression.lz4.level", _between(1, 17)),
    TopicConfigDef(
        "compression.type", _S, "producer", "compression.type",
        _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    ),
    TopicConfigDef("compression.zstd.level", _I, 3, "compression.zstd.level", _between(-131072, 22)),
    TopicConfigDef("delete.retention.ms", _L, _DAY_MS, "log.cleaner.delete.retention.ms", _at_least(0)),
    TopicConfigDef("file.delete.delay.ms", _L, 60000, "log.segment.delete.delay.ms", _at_least(0)),
    TopicConfigDef("flush.messages", _L, LONG_MAX, "log.flush.interval.messages", _at_least(1)),
    TopicConfigDef("flush.ms", _L, LONG_MAX, "log.flush.interval.ms", _at_least(0)),
    TopicConfigDef(
        "follower.replication.throttled.replicas", _LI, (), "follower.replication.throttled.replicas", _replica_list
    ),
    TopicConfigDef("index.interval.bytes", _I, 4096, "log.index.interval.bytes", _at_least(0)),
    TopicConfigDef(
        "leader.replication.throttled.replicas", _LI, (), "leader.replication.throttled.replicas", _replica_list
    ),
    # KIP-1303 "Topic Configuration Overrides": the same names as the broker configs
    TopicConfigDef("leader.election.eligible.local.log.bytes", _L, -1, "leader.election.eligible.local.log.bytes",
                   _at_least(-1)),
    TopicConfigDef("leader.election.eligible.local.log.ms", _L, -1, "leader.election.eligible.local.log.ms",
                   _at_least(-1)),
    TopicConfigDef("local.retention.bytes", _L, -2, "log.local.retention.bytes", _at_least(-2)),
    TopicConfigDef("local.retention.ms", _L, -2, "log.local.retention.ms", _at_least(-2)),
    TopicConfigDef("max.compaction.lag.ms", _L, LONG_MAX, "log.cleaner.max.compaction.lag.ms", _at_least(1)),
    TopicConfigDef("max.message.bytes", _I, 1048588, "message.max.bytes", _at_least(0)),
    TopicConfigDef(
        "message.timestamp.after.max.ms", _L, 3600000, "log.message.timestamp.after.max.ms", _at_least(0)
    ),
    TopicConfigDef(
        "message.timestamp.before.max.ms", _L, LONG_MAX, "log.message.timestamp.before.max.ms", _at_least(0)
    ),
    TopicConfigDef(
        "message.timestamp.type", _S, "CreateTime", "log.message.timestamp.type", _one_of("CreateTime", "LogAppendTime")
    ),
    TopicConfigDef("min.cleanable.dirty.ratio", _D, 0.5, "log.cleaner.min.cleanable.ratio", _between(0, 1)),
    TopicConfigDef("min.compaction.lag.ms", _L, 0, "log.cleaner.min.compaction.lag.ms", _at_least(0)),
    TopicConfigDef("min.insync.replicas", _I, 1, "min.insync.replicas", _at_least(1)),
    TopicConfigDef("preallocate", _B, False, "log.preallocate"),
    TopicConfigDef("remote.log.copy.disable", _B, False, "remote.log.copy.disable"),
    TopicConfigDef("remote.log.delete.on.disable", _B, False, "remote.log.delete.on.disable"),
    TopicConfigDef("remote.storage.enable", _B, False, "remote.storage.enable"),
    TopicConfigDef("retention.bytes", _L, -1, "log.retention.bytes"),
    TopicConfigDef("retention.ms", _L, 7 * _DAY_MS, "log.retention.ms", _at_least(-1)),
    TopicConfigDef("segment.bytes", _I, 1024 * 1024 * 1024, "log.segment.bytes", _at_least(1024 * 1024)),
    TopicConfigDef("segment.index.bytes", _I, 10 * 1024 * 1024, "log.index.size.max.bytes", _at_least(4)),
    TopicConfigDef("segment.jitter.ms", _L, 0, "log.roll.jitter.ms", _at_least(0)),
    TopicConfigDef("segment.ms", _L, 7 * _DAY_MS, "log.roll.ms", _at_least(1)),
    TopicConfigDef("unclean.leader.election.enable", _B, False, "unclean.leader.election.enable"),
    # tierlog's own (docs/tables.md): the topic as an Iceberg table; no broker-level default
    TopicConfigDef(TABLE_MODE, _S, OFF, "", _one_of(*MODES)),
    TopicConfigDef(TABLE_VALUE_SCHEMA, _S, "", ""),
    TopicConfigDef(TABLE_KEEP_EXPIRED, _B, False, ""),
]

_DOCS = {
    "cleanup.policy": "delete: drop old segments by retention; compact: keep the latest value per key.",
    "compression.gzip.level": "Compression level when compression.type is gzip.",
    "compression.lz4.level": "Compression level when compression.type is lz4.",
    "compression.type": "Final compression of the topic's data; producer keeps what the producer sent.",
    "compression.zstd.level": "Compression level when compression.type is zstd.",
    "delete.retention.ms": "How long delete markers are kept on compacted topics.",
    "file.delete.delay.ms": "Wait before a deleted segment's files are removed from disk.",
    "flush.messages": "Force an fsync after this many messages are appended.",
    "flush.ms": "Force an fsync when unflushed data is older than this.",
    "follower.replication.throttled.replicas": "Replicas whose follower-side replication is throttled.",
    "index.interval.bytes": "Bytes between offset index entries.",
    "leader.replication.throttled.replicas": "Replicas whose leader-side replication is throttled.",
    "leader.election.eligible.local.log.bytes": "KIP-1303: local log bytes a replica must hold to be preferred "
                                                "as leader; -1 off.",
    "leader.election.eligible.local.log.ms": "KIP-1303: local log time a replica must cover to be preferred "
                                             "as leader; -1 off.",
    "local.retention.bytes": "Local bytes kept for tiered topics (-2: use retention.bytes).",
    "local.retention.ms": "Local time kept for tiered topics (-2: use retention.ms).",
    "max.compaction.lag.ms": "Longest a message stays ineligible for compaction.",
    "max.message.bytes": "Largest record batch accepted.",
    "message.timestamp.after.max.ms": "How far in the future a CreateTime timestamp may be.",
    "message.timestamp.before.max.ms": "How far in the past a CreateTime timestamp may be.",
    "message.timestamp.type": "CreateTime (the producer's clock) or LogAppendTime (the broker's).",
    "min.cleanable.dirty.ratio": "Dirty ratio above which the log is compacted.",
    "min.compaction.lag.ms": "Shortest time a message stays uncompacted.",
    "min.insync.replicas": "In-sync replicas needed to acknowledge acks=all writes.",
    "preallocate": "Preallocate segment files (tierlog writes plain append-only files).",
    "remote.log.copy.disable": "Stop copying segments to remote storage.",
    "remote.log.delete.on.disable": "Delete remote data when remote storage is disabled.",
    "remote.storage.enable": "Tier this topic's segments to remote storage.",
    "retention.bytes": "Largest size of a partition before old segments are deleted (-1: no limit).",
    "retention.ms": "Longest time a segment is kept (-1: forever).",
    "segment.bytes": "Segment file size limit.",
    "segment.index.bytes": "Size limit of each segment's offset and time index.",
    "segment.jitter.ms": "Largest random jitter subtracted from segment.ms.",
    "segment.ms": "Roll a new segment after this much time.",
    "unclean.leader.election.enable": "Allow an out-of-sync replica to become leader.",
    TABLE_MODE: "off, key_value or value_json: each uploaded segment is also committed to the topic's Iceberg "
                "table (docs/tables.md).",
    TABLE_VALUE_SCHEMA: "value_json: the value's JSON Schema (a flat subset, docs/tables.md).",
    TABLE_KEEP_EXPIRED: "true: offsets that remote retention or DeleteRecords remove from the log stay in the "
                        "topic's table (false: the table is cut at the log start offset too).",
}

TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = MappingProxyType({d.name: replace(d, doc=_DOCS[d.name]) for d in _DEFS})
_INTERNAL = TopicConfigDef(INTERNAL_SEGMENT_BYTES, _I, None, "", _at_least(1))
_ALL_DEFS = {**TOPIC_CONFIGS, INTERNAL_SEGMENT_BYTES: _INTERNAL}


def _parse(definition: TopicConfigDef, raw: Any) -> Any:
    """Convert a string (or already-typed) value to the config's Python type."""
    kind = definition.type
    if kind in (ConfigType.INT, ConfigType.LONG):
        value = raw if isinstance(raw, int) and not isinstance(raw, bool) else _number(int, raw, kind)
        limit = INT_MAX if kind == ConfigType.INT else LONG_MAX
        if not -limit - 1 <= value <= limit:
            raise ValueError(f"{value} does not fit in {kind}")
        return value
    if kind == ConfigType.DOUBLE:
        return _number(float, raw, kind)
    if kind == ConfigType.BOOLEAN:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in ("true", "false"):
            raise ValueError("expected true or false")
        return text == "true"
    if kind == ConfigType.LIST:
        items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
        return tuple(s.strip() for s in items if str(s).strip())
    return str(raw).strip()


def _number(convert, raw: Any, kind: str):
    """``convert(raw)``; a ValueError in Kafka's words, not Python's ("invalid literal for int()")."""
    try:
        return convert(str(raw).strip())
    except ValueError:
        raise ValueError(f"not a number of type {kind}") from None


# attribute -> topic config, the values ``LogConfig`` carries as plain attributes
_HOT = {
    "segment_ms": "segment.ms", "segment_jitter_ms": "segment.jitter.ms", "segment_index_bytes": "segment.index.bytes",
    "retention_ms": "retention.ms", "retention_bytes": "retention.bytes",
    "index_interval_bytes": "index.interval.bytes", "flush_messages": "flush.messages", "flush_ms": "flush.ms",
    "max_message_bytes": "max.message.bytes", "file_delete_delay_ms": "file.delete.delay.ms",
    "cleanup_policy": "cleanup.policy", "message_timestamp_type": "message.timestamp.type",
    "message_timestamp_before_max_ms": "message.timestamp.before.max.ms",
    "message_timestamp_after_max_ms": "message.timestamp.after.max.ms", "compression_type": "compression.type",
    "min_insync_replicas": "min.insync.replicas", "unclean_leader_election_enable": "unclean.leader.election.enable",
    "remote_storage_enable": "remote.storage.enable", "min_cleanable_ratio": "min.cleanable.dirty.ratio",
    "delete_retention_ms": "delete.retention.ms", "min_compaction_lag_ms": "min.compaction.lag.ms",
    "max_compaction_lag_ms": "max.compaction.lag.ms",
}


class LogConfig:
    """Resolved topic config. Attributes carry the values the log acts on."""

    # the values the log acts on, read on every append: plain attributes set once (issue 36: a
    # property and a mapping lookup each were a dozen Python calls per single-record Produce)
    __slots__ = ("overrides", "values", *_HOT, "segment_bytes", "log_append_time", "delete_enabled", "compact_enabled")
    values: Mapping[str, Any]
    overrides: frozenset[str]
    segment_bytes: int
    log_append_time: bool
    delete_enabled: bool                 # cleanup.policy contains delete: time and size retention apply
    compact_enabled: bool
    segment_ms: int
    segment_jitter_ms: int
    segment_index_bytes: int
    retention_ms: int
    retention_bytes: int
    index_interval_bytes: int
    flush_messages: int
    flush_ms: int
    max_message_bytes: int
    file_delete_delay_ms: int
    cleanup_policy: tuple[str, ...]
    message_timestamp_type: str
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    compression_type: str
    min_insync_replicas: int
    unclean_leader_election_enable: bool
    remote_storage_enable: bool
    min_cleanable_ratio: float
    delete_retention_ms: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int

    def __init__(self, values: Mapping[str, Any] | None = None, overrides: frozenset[str] = frozenset()) -> None:
        resolved = {name: d.default for name, d in _ALL_DEFS.items()}
        resolved.update(values or {})
        init = object.__setattr__
        init(self, "values", MappingProxyType(resolved))
        init(self, "overrides", frozenset(overrides))
        for attribute, name in _HOT.items():
            init(self, attribute, resolved[name])
        internal = resolved[INTERNAL_SEGMENT_BYTES]
        init(self, "segment_bytes", resolved["segment.bytes"] if internal is None else internal)
        init(self, "log_append_time", self.message_timestamp_type == "LogAppendTime")
        init(self, "delete_enabled", "delete" in self.cleanup_policy)
        init(self, "compact_enabled", "compact" in self.cleanup_policy)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("LogConfig is immutable; build a new one with with_overrides")

    @classmethod
    def from_props(cls, props: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> LogConfig:
        """Parse and validate ``props`` (over ``defaults``); ValueError names the bad key."""
        values: dict[str, Any] = {}
        for source in (defaults or {}, props):
            for key, raw in source.items():
                values[key] = _parse_checked(key, raw)
        config = cls(values, frozenset(props))
        config._check_combinations()
        return config

    def _check_combinations(self) -> None:
        if self.values["min.compaction.lag.ms"] > self.values["max.compaction.lag.ms"]:
            raise ValueError("min.compaction.lag.ms: must not exceed max.compaction.lag.ms")
        if self.remote_storage_enable and self.compact_enabled:
            raise ValueError("remote.storage.enable: remote log storage is only supported for topics with "
                             "cleanup.policy=delete")
        if self.remote_storage_enable:
            _check_local_retention("local.retention.ms", self.values["local.retention.ms"], self.retention_ms)
            _check_local_retention("local.retention.bytes", self.values["local.retention.bytes"], self.retention_bytes)
        check_table_config(self.values)

    # --- values the storage layer acts on (the attributes above, and these) ----------------------

    @property
    def local_retention_ms(self) -> int:
        """local.retention.ms, -2 meaning retention.ms (Kafka's localRetentionMs())."""
        value = self.values["local.retention.ms"]
        return self.retention_ms if value == -2 else value

    @property
    def local_retention_bytes(self) -> int:
        value = self.values["local.retention.bytes"]
        return self.retention_bytes if value == -2 else value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogConfig) and dict(self.values) == dict(other.values)

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self.values.items())))

    def __repr__(self) -> str:
        changed = {k: self.values[k] for k in sorted(self.overrides)}
        return f"LogConfig({changed})"


def _parse_checked(key: str, raw: Any) -> Any:
    definition = _ALL_DEFS.get(key)
    if definition is None:
        raise ValueError(f"{key}: unknown topic config")
    try:
        value = _parse(definition, raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{key}: invalid value {raw!r} ({exc})") from None
    problem = definition.check(value) if definition.check else None
    if problem:
        raise ValueError(f"{key}: invalid value {raw!r}: {problem}")
    return value


def _check_local_retention(key: str, local: int, total: int) -> None:
    if local == -2:
        return
    if total == -1 and local == -1:
        return
    if total != -1 and (local == -1 or local > total):
        raise ValueError(f"{key}: must not exceed its total retention ({total})")
