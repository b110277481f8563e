"""The options of the ``tierlog`` source and sink: Spark's Kafka option names and meanings.

Parsing is pure (no network), so every bad option fails at once, on the driver,
with a message that names it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from tierlog.net.client_security import client_security, to_librdkafka
from tierlog.net.security import PLAINTEXT, Security, SecurityConfigError

__all__ = ["CATALOG_OPTIONS", "ISOLATION_LEVELS", "REMOTE_AUTO", "REMOTE_OFF", "REMOTE_TABLE",
           "SOURCE_KAFKA_OPTIONS", "OffsetSpec", "OptionError", "SinkOptions",
           "SourceOptions", "catalog_settings", "parse_sink_options",
           "parse_source_options", "tp_key"]

EARLIEST, LATEST = -2, -1        # Spark's Kafka JSON: -2 earliest, -1 latest
REMOTE_AUTO, REMOTE_OFF = "auto", "off"
REMOTE_TABLE = "table"          # a table-mode topic's Iceberg table where it covers the range (spark/table_topic.py)
CATALOG_OPTIONS = ("tierlog.table.catalog.", "tierlog.table.namespace")   # the brokers' names (docs/tables.md)
REMOTE_PARTITION_BYTES = 128 * 1024 * 1024    # as Spark's spark.sql.files.maxPartitionBytes
# remoteReadAheadChunks: ranged GETs (of 8 MiB) a direct read task keeps in flight while it decodes
REMOTE_READ_AHEAD_CHUNKS, MAX_READ_AHEAD_CHUNKS = 2, 16
# readAheadBatches: Arrow batches (of up to kafka.fetch.max.bytes) a task's reader thread keeps ready for Spark
READ_AHEAD_BATCHES, MAX_READ_AHEAD_BATCHES = 2, 16
_RSM_PREFIX = "rsm.config."

# kafka.* options the Kafka source refuses too, with the reason it gives
_UNSUPPORTED_KAFKA = {
    "auto.offset.reset": "use startingOffsets instead",
    "key.deserializer": "keys are always read as bytes (cast the column)",
    "value.deserializer": "values are always read as bytes (cast the column)",
    "enable.auto.commit": "the source keeps offsets in Spark's checkpoint, not in Kafka",
    "interceptor.classes": "interceptors do not apply to this source",
}
# kafka.* options the source honours, besides the security ones (_SECURITY_PREFIXES)
SOURCE_KAFKA_OPTIONS = ("kafka.bootstrap.servers", "kafka.client.id", "kafka.group.id", "kafka.fetch.max.bytes",
                        "kafka.request.timeout.ms", "kafka.isolation.level")
# Kafka's isolation.level values -> the IsolationLevel of ListOffsets and Fetch (Spark's default: read_uncommitted)
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}
_READ_UNCOMMITTED = "read_uncommitted"
# Spark's Kafka source: group ids are <prefix>-<uuid>, prefixes by query kind; offsets asked again on failure
_GROUP_ID_PREFIX = {False: "spark-kafka-relation", True: "spark-kafka-source"}
FETCH_OFFSET_RETRIES, FETCH_OFFSET_RETRY_INTERVAL_MS = 3, 10
POLL_TIMEOUT_MS = 120_000          # Spark's default, spark.network.timeout
_UNSUPPORTED_KAFKA_SINK = {
    "key.serializer": "keys are written as bytes (string columns are UTF-8 encoded)",
    "value.serializer": "values are written as bytes (string columns are UTF-8 encoded)",
    "transactional.id": "set transactional=true (and transactionalIdPrefix): each task needs an id of its own",
}


class OptionError(ValueError):
    """A bad option; the message starts with the option's name. Spark reports it on one line
    (`spark.option_errors`)."""


def tp_key(topic: str, partition: int) -> tuple[str, int]:
    return (topic, partition)


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends: earliest, latest, per-partition offsets or timestamps."""

    kind: str                                   # earliest | latest | offsets | timestamp | timestamps
    offsets: dict = field(default_factory=dict)  # (topic, partition) -> offset or timestamp
    timestamp: int = 0                           # kind == "timestamp": one for every partition
    option: str = ""                             # the option it came from, for messages


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscribe: tuple[str, ...] | None
    subscribe_pattern: str | None
    assign: tuple[tuple[str, int], ...] | None
    starting: OffsetSpec
    ending: OffsetSpec | None                    # None in streaming
    timestamp_strategy: str                      # error | latest (no offset at or after a timestamp)
    include_headers: bool
    fail_on_data_loss: bool
    min_partitions: int | None
    max_records_per_partition: int | None
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    fetch_max_bytes: int
    retry_timeout_s: float
    client_id: str
    group_id: str = ""                           # kafka.group.id, or groupIdPrefix-<uuid>
    poll_timeout_s: float = POLL_TIMEOUT_MS / 1000        # kafkaConsumer.pollTimeoutMs, on executors
    fetch_offset_retries: int = FETCH_OFFSET_RETRIES      # fetchOffset.numRetries, on the driver
    fetch_offset_retry_interval_s: float = FETCH_OFFSET_RETRY_INTERVAL_MS / 1000   # fetchOffset.retryIntervalMs
    security: Security = PLAINTEXT               # kafka.security.protocol, kafka.ssl.*
    remote_storage: str = REMOTE_OFF             # off | auto | table | a DIR or s3://BUCKET/PREFIX
    # catalogType, catalogUri, tierlog.table.catalog.<property> / tierlog.table.namespace: remoteStorage=table's catalog
    table_catalog: tuple[str, str, tuple[tuple[str, str], ...]] = ("sql", "", ())
    remote_settings: tuple[tuple[str, str], ...] = ()    # rsm.config.* options, for the object store
    isolation_level: int = 0                     # kafka.isolation.level: 0 read_uncommitted, 1 read_committed
    remote_partition_bytes: int = REMOTE_PARTITION_BYTES  # remotePartitionBytes: a direct read task's target
    remote_read_ahead_chunks: int = REMOTE_READ_AHEAD_CHUNKS  # remoteReadAheadChunks: GETs in flight per task
    read_ahead_batches: int = READ_AHEAD_BATCHES  # readAheadBatches: Arrow batches read ahead of Spark per task
    freeze_worker_gc: bool = True                 # freezeWorkerGc: gc.freeze() before each read task (worker_gc.py)
    columns: tuple[str, ...] | None = None       # the reader's schema picked these columns (spark/columns.py)


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    producer_config: dict
    flush_timeout_s: float
    transactional: bool = False                  # transactional: one Kafka transaction per task
    transactional_id_prefix: str | None = None   # transactionalIdPrefix (else one per query / per write)
    freeze_worker_gc: bool = True                 # freezeWorkerGc: gc.freeze() before each write task


def catalog_settings(options: Mapping) -> tuple[tuple[str, str], ...]:
    """The tables' catalog properties and namespace among ``options``, named as the brokers' settings
    (``tierlog.table.catalog.<property>``, ``tierlog.table.namespace``; keys in lower case, as pyiceberg's are)."""
    return tuple(sorted((str(k).lower(), str(v)) for k, v in options.items()
                        if str(k).lower().startswith(CATALOG_OPTIONS)))


def _get(options: Mapping, name: str):
    """Case-insensitive lookup (Spark passes a case-insensitive dict, tests pass plain dicts)."""
    if name in options:
        return options[name]
    lowered = name.lower()
    for k, v in options.items():
        if k.lower() == lowered:
            return v
    return None


def _bootstrap(options: Mapping) -> str:
    servers = _get(options, "kafka.bootstrap.servers") or _get(options, "bootstrap.servers")
    if not servers or not str(servers).strip():
        raise OptionError("kafka.bootstrap.servers: option must be specified for the tierlog source and sink "
                          "(bootstrap.servers is accepted too), e.g. .option('kafka.bootstrap.servers', "
                          "'127.0.0.1:9092')")
    for entry in str(servers).split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise OptionError(f"kafka.bootstrap.servers: {entry.strip()!r} is not host:port")
    return str(servers)


def _bool(options: Mapping, name: str, default: bool) -> bool:
    value = _get(options, name)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"{name}: {value!r} is not true or false")
    return text == "true"


def _int(options: Mapping, name: str, minimum: int = 1) -> int | None:
    value = _get(options, name)
    if value is None:
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        raise OptionError(f"{name}: {value!r} is not an integer") from None
    if number < minimum:
        raise OptionError(f"{name}: {number} must be at least {minimum}")
    return number


def _duration_ms(options: Mapping, name: str, default_ms: int) -> int:
    """``15m``, ``30s``, ``500ms`` or a plain number of milliseconds."""
    value = _get(options, name)
    if value is None:
        return default_ms
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|min|h)?\s*", str(value).lower())
    if not m:
        raise OptionError(f"{name}: {value!r} is not a duration like 500ms, 30s or 15m")
    scale = {"ms": 1, None: 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}[m.group(2)]
    return int(m.group(1)) * scale


def _json_object(name: str, text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise OptionError(f"{name}: {text!r} is not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise OptionError(f"{name}: expected a JSON object like {{\"topicA\":{{\"0\":23,\"1\":-1}}}}, got {text!r}")
    return value


def _partition_map(name: str, text: str) -> dict[tuple[str, int], int]:
    out = {}
    for topic, parts in _json_object(name, text).items():
        if not isinstance(parts, dict):
            raise OptionError(f"{name}: topic {topic!r} must map partition numbers to values, got {parts!r}")
        for p, value in parts.items():
            try:
                out[(topic, int(p))] = int(value)
            except (TypeError, ValueError):
                raise OptionError(f"{name}: {topic} partition {p!r} -> {value!r} is not a partition number "
                                  "and an integer") from None
    return out


def _offset_spec(options: Mapping, prefix: str, streaming: bool) -> OffsetSpec | None:
    """startingX / endingX, with Spark's precedence: global timestamp, then by-timestamp, then offsets."""
    ts = _get(options, f"{prefix}Timestamp")
    if ts is not None:
        try:
            return OffsetSpec("timestamp", timestamp=int(str(ts).strip()), option=f"{prefix}Timestamp")
        except ValueError:
            raise OptionError(f"{prefix}Timestamp: {ts!r} is not a timestamp in milliseconds") from None
    by_ts = _get(options, f"{prefix}OffsetsByTimestamp")
    if by_ts is not None:
        return OffsetSpec("timestamps", offsets=_partition_map(f"{prefix}OffsetsByTimestamp", str(by_ts)),
                          option=f"{prefix}OffsetsByTimestamp")
    name = f"{prefix}Offsets"
    value = _get(options, name)
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower(), option=name)
    if text.startswith("{"):
        offsets = _partition_map(name, text)
        for (t, p), off in offsets.items():
            if off < EARLIEST:
                raise OptionError(f"{name}: {t} partition {p} offset {off} is not an offset, -1 (latest) "
                                  "or -2 (earliest)")
        return OffsetSpec("offsets", offsets=offsets, option=name)
    raise OptionError(f"{name}: {text!r} is not 'earliest', 'latest' or a JSON object like "
                      "{\"topicA\":{\"0\":23,\"1\":-2}} (-2 earliest, -1 latest)")


def _subscription(options: Mapping):
    given = {k: _get(options, k) for k in ("subscribe", "subscribePattern", "assign")}
    given = {k: v for k, v in given.items() if v is not None}
    if len(given) != 1:
        which = ", ".join(sorted(given)) or "none of them"
        raise OptionError(f"subscribe: exactly one of the options 'subscribe', 'subscribePattern' or 'assign' "
                          f"must be specified (got {which})")
    subscribe = pattern = assign = None
    if "subscribe" in given:
        subscribe = tuple(t.strip() for t in str(given["subscribe"]).split(",") if t.strip())
        if not subscribe:
            raise OptionError("subscribe: no topic to subscribe to (a comma-separated list of topics)")
    elif "subscribePattern" in given:
        pattern = str(given["subscribePattern"]).strip()
        if not pattern:
            raise OptionError("subscribePattern: an empty pattern")
        try:
            re.compile(pattern)
        except re.error as e:
            raise OptionError(f"subscribePattern: {pattern!r} is not a regular expression ({e})") from None
    else:
        obj = _json_object("assign", str(given["assign"]))
        pairs = []
        for topic, parts in obj.items():
            if not isinstance(parts, list) or not all(isinstance(p, int) for p in parts):
                raise OptionError(f"assign: topic {topic!r} must map to a list of partition numbers, "
                                  "like {\"topicA\":[0,1]}")
            pairs += [(topic, p) for p in parts]
        if not pairs:
            raise OptionError("assign: no partition assigned")
        assign = tuple(sorted(pairs))
    return subscribe, pattern, assign


def _check_kafka_options(options: Mapping, refused: dict) -> None:
    for key in options:
        k = key.lower()
        if k.startswith("kafka.") and k[6:] in refused:
            raise OptionError(f"{key}: not supported by the tierlog source and sink, {refused[k[6:]]}")


def _check_source_kafka_options(options: Mapping) -> None:
    """A kafka.* option the source does not honour is an error naming it, never silently ignored."""
    for key in options:
        k = key.lower()
        if k.startswith("kafka.") and k not in SOURCE_KAFKA_OPTIONS and not k.startswith(_SECURITY_PREFIXES):
            raise OptionError(f"{key}: not supported by the tierlog source (it honours "
                              f"{', '.join(SOURCE_KAFKA_OPTIONS)} and kafka.security.protocol, kafka.ssl.*, "
                              "kafka.sasl.*)")


def _isolation_level(options: Mapping) -> int:
    """kafka.isolation.level: read_uncommitted (Spark's default) or read_committed (KIP-98: read to the
    last stable offset, aborted transactions left out, through the brokers or, for direct reads of
    remote segments, with the uploaded ``.txnindex`` objects: ``spark.remote_txn``)."""
    level = str(_get(options, "kafka.isolation.level") or _READ_UNCOMMITTED).strip().lower()
    if level not in ISOLATION_LEVELS:
        raise OptionError(f"kafka.isolation.level: {level!r} is not read_uncommitted or read_committed")
    return ISOLATION_LEVELS[level]


def _group_id(options: Mapping, streaming: bool) -> str:
    """kafka.group.id, else ``<groupIdPrefix>-<uuid>`` as Spark's Kafka source makes one per query."""
    given = _get(options, "kafka.group.id")
    if given is not None and str(given).strip():
        return str(given).strip()
    prefix = str(_get(options, "groupIdPrefix") or _GROUP_ID_PREFIX[streaming]).strip()
    if not prefix:
        raise OptionError("groupIdPrefix: an empty prefix")
    return f"{prefix}-{uuid.uuid4()}"


_SECURITY_PREFIXES = ("kafka.security.", "kafka.ssl.", "kafka.sasl.", "kafka.enable.ssl.")


def _security_props(options: Mapping) -> dict[str, str]:
    """The kafka.security.protocol / kafka.ssl.* / kafka.sasl.* options, without ``kafka.``."""
    return {k.lower()[6:]: str(v) for k, v in options.items() if k.lower().startswith(_SECURITY_PREFIXES)}


def _security(options: Mapping) -> Security:
    """The source's connection security, checked on the driver: a setting tierlog cannot
    honour is an error, never a silent plaintext connection."""
    try:
        return client_security(_security_props(options))
    except SecurityConfigError as exc:
        raise OptionError(f"kafka.{exc}") from None


def parse_source_options(options: Mapping, *, streaming: bool) -> SourceOptions:
    bootstrap = _bootstrap(options)
    _check_kafka_options(options, _UNSUPPORTED_KAFKA)
    _check_source_kafka_options(options)
    subscribe, pattern, assign = _subscription(options)
    starting = _offset_spec(options, "starting", streaming) or OffsetSpec(
        "latest" if streaming else "earliest", option="startingOffsets")
    ending = _offset_spec(options, "ending", streaming)
    if streaming:
        if ending is not None:
            raise OptionError(f"{ending.option}: ending offsets are not valid in streaming queries")
    else:
        ending = ending or OffsetSpec("latest", option="endingOffsets")
        if starting.kind == "latest":
            raise OptionError("startingOffsets: 'latest' is not valid for batch queries (use earliest, "
                              "JSON offsets or a timestamp)")
        if starting.kind == "offsets" and LATEST in starting.offsets.values():
            raise OptionError("startingOffsets: -1 (latest) is not valid for batch queries")
        if ending.kind == "earliest":
            raise OptionError("endingOffsets: 'earliest' is not valid for batch queries")
        if ending.kind == "offsets" and EARLIEST in ending.offsets.values():
            raise OptionError("endingOffsets: -2 (earliest) is not valid for batch queries")
    strategy = str(_get(options, "startingOffsetsByTimestampStrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"startingOffsetsByTimestampStrategy: {strategy!r} is not 'error' or 'latest'")
    remote = _remote_storage(options)
    if remote[0] == REMOTE_TABLE and not _isolation_level(options):
        raise OptionError("remoteStorage: a table holds committed records only (no aborted transaction): "
                          "remoteStorage=table needs kafka.isolation.level=read_committed")
    group_id = _group_id(options, streaming)
    return SourceOptions(
        bootstrap_servers=bootstrap, subscribe=subscribe, subscribe_pattern=pattern, assign=assign,
        starting=starting, ending=ending, timestamp_strategy=strategy,
        include_headers=_bool(options, "includeHeaders", False),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        min_partitions=_int(options, "minPartitions"),
        max_records_per_partition=_int(options, "maxRecordsPerPartition"),
        max_offsets_per_trigger=_int(options, "maxOffsetsPerTrigger"),
        min_offsets_per_trigger=_int(options, "minOffsetsPerTrigger"),
        max_trigger_delay_ms=_duration_ms(options, "maxTriggerDelay", 15 * 60_000),
        fetch_max_bytes=_int(options, "kafka.fetch.max.bytes", 1024) or 8 * 1024 * 1024,
        retry_timeout_s=(_int(options, "kafka.request.timeout.ms", 1) or 30_000) / 1000,
        client_id=str(_get(options, "kafka.client.id") or f"consumer-{group_id}-1"),   # Kafka's default form
        group_id=group_id,
        poll_timeout_s=(_int(options, "kafkaConsumer.pollTimeoutMs") or POLL_TIMEOUT_MS) / 1000,
        fetch_offset_retries=_retries(options),
        fetch_offset_retry_interval_s=_retry_interval_ms(options) / 1000,
        security=_security(options),
        remote_storage=remote[0], remote_settings=remote[1],
        table_catalog=(str(_get(options, "catalogType") or "sql").strip().lower(),
                       str(_get(options, "catalogUri") or "").strip(), catalog_settings(options)),
        isolation_level=_isolation_level(options),
        remote_partition_bytes=_int(options, "remotePartitionBytes") or REMOTE_PARTITION_BYTES,
        remote_read_ahead_chunks=_bounded(options, "remoteReadAheadChunks", REMOTE_READ_AHEAD_CHUNKS,
                                          MAX_READ_AHEAD_CHUNKS),
        read_ahead_batches=_bounded(options, "readAheadBatches", READ_AHEAD_BATCHES, MAX_READ_AHEAD_BATCHES),
        freeze_worker_gc=_bool(options, "freezeWorkerGc", True),
    )


def _bounded(options: Mapping, name: str, default: int, most: int) -> int:
    """A count from 0 (off) to ``most``, ``default`` when not set."""
    number = _int(options, name, 0)
    if number is not None and number > most:
        raise OptionError(f"{name}: {number} must be at most {most}")
    return default if number is None else number


def _retries(options: Mapping) -> int:
    value = _int(options, "fetchOffset.numRetries", minimum=0)
    return FETCH_OFFSET_RETRIES if value is None else value


def _retry_interval_ms(options: Mapping) -> int:
    value = _int(options, "fetchOffset.retryIntervalMs", minimum=0)
    return FETCH_OFFSET_RETRY_INTERVAL_MS if value is None else value


def _remote_storage(options: Mapping) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``remoteStorage`` (auto, off, table, a directory or s3://BUCKET/PREFIX) and the ``rsm.config.*`` options."""
    value = str(_get(options, "remoteStorage") or REMOTE_AUTO).strip()
    settings = tuple(sorted((str(k).lower(), str(v)) for k, v in options.items()
                            if str(k).lower().startswith(_RSM_PREFIX)))
    if value.lower() in (REMOTE_AUTO, REMOTE_OFF, REMOTE_TABLE):
        return value.lower(), settings
    if value.startswith("s3://") and not value[len("s3://"):].partition("/")[0]:
        raise OptionError(f"remoteStorage: no bucket in {value!r} (want s3://BUCKET/PREFIX, a directory, "
                          "auto, off or table)")
    return value, settings


def parse_sink_options(options: Mapping) -> SinkOptions:
    bootstrap = _bootstrap(options)
    _check_kafka_options(options, _UNSUPPORTED_KAFKA_SINK)
    config = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": "5",
              "partitioner": "murmur2_random",          # Kafka's Java default: same key, same partition
              "message.timeout.ms": "120000",
              # librdkafka's warnings and errors, not its info lines (a producer's telemetry id, KIP-714):
              # Spark's Kafka sink logs its client's INFO under Spark's default WARN; kafka.log_level sets it
              "log_level": "4"}
    for key, value in options.items():
        k = key.lower()
        if k.startswith("kafka.") and k != "kafka.bootstrap.servers":
            config[key[6:]] = str(value)
    try:
        config = to_librdkafka(config)          # Kafka's client ssl.* names, as librdkafka's
    except SecurityConfigError as exc:
        raise OptionError(f"kafka.{exc}") from None
    flush_timeout_ms = int(config.get("message.timeout.ms", 120_000)) + 30_000
    topic = _get(options, "topic")
    prefix = _get(options, "transactionalIdPrefix")
    if prefix is not None and not str(prefix).strip():
        raise OptionError("transactionalIdPrefix: an empty prefix")
    transactional = _bool(options, "transactional", False)
    if transactional:       # librdkafka wants message.timeout.ms <= transaction.timeout.ms (60 s by default)
        config.setdefault("transaction.timeout.ms", str(config["message.timeout.ms"]))
    return SinkOptions(bootstrap, str(topic) if topic else None, config, flush_timeout_ms / 1000,
                       transactional=transactional,
                       transactional_id_prefix=str(prefix).strip() if prefix is not None else None,
                       freeze_worker_gc=_bool(options, "freezeWorkerGc", True))
