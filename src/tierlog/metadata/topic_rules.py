"""Topic names, topic configs and config operations, as the controller checks them.

The rules (and error codes) Kafka applies to CreateTopics, DeleteTopics and
IncrementalAlterConfigs.  The controller applies them all; the broker checks
topic names (DescribeTopicPartitions, Metadata, Produce), so the rules live here, below both
roles.  Every refusal is ``RuleError(error_code, message)``.

Reserved names, as Kafka has them:

- ``__cluster_metadata`` (``CLUSTER_METADATA_TOPIC``) is the Raft metadata log,
  never a topic: CreateTopics of it is INVALID_REQUEST ("Creation of internal
  topic __cluster_metadata is prohibited.", Kafka's ControllerApis), so it never
  enters the image: Metadata (never auto-created), Produce and DeleteTopics answer
  UNKNOWN_TOPIC_OR_PARTITION, as Kafka's do.
- ``INTERNAL_TOPICS`` (``__consumer_offsets``, ``__transaction_state``,
  ``__share_group_state``, ``__remote_log_metadata``): the node creates them; a client's DeleteTopics of
  one is INVALID_REQUEST (deleting one would lose every group's offsets or every
  remote segment's metadata, and a re-creation could give it fewer partitions,
  which moves every group to another coordinator).  Clients never produce to
  ``__consumer_offsets`` / ``__transaction_state`` / ``__share_group_state`` (``CLIENT_UNWRITABLE_TOPICS``:
  INVALID_TOPIC_EXCEPTION, Kafka's "Cannot append to internal topic");
  ``__remote_log_metadata`` is written by the brokers through Produce, as
  Kafka's topic-based remote log metadata manager does.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tierlog.protocol.errors import ErrorCode
from tierlog.storage import TOPIC_CONFIGS, LogConfig
from tierlog.storage.table_config import (
    OFF,
    TABLE_MODE,
    TABLE_VALUE_SCHEMA,
    check_schema_change,
)

__all__ = [
    "APPEND",
    "CLIENT_UNWRITABLE_TOPICS",
    "CLUSTER_METADATA_TOPIC",
    "DELETE",
    "INTERNAL_TOPICS",
    "MAX_PARTITIONS",
    "MAX_TOPIC_NAME_LENGTH",
    "SET",
    "SUBTRACT",
    "RuleError",
    "TieringRules",
    "apply_config_op",
    "validate_creatable",
    "validate_deletable",
    "validate_topic_configs",
    "validate_topic_name",
]

MAX_TOPIC_NAME_LENGTH = 249
MAX_PARTITIONS = 10000          # per topic; a bound of ours, Kafka has none
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state",
                             "__remote_log_metadata"})
CLIENT_UNWRITABLE_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class RuleError(Exception):
    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code


def validate_topic_name(name: str | None) -> None:
    if not name or name in (".", ".."):
        raise RuleError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name {name!r} is illegal.")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise RuleError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                        f"Topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters.")
    if not _LEGAL.match(name):
        raise RuleError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                        f"Topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'.")


def validate_creatable(name: str | None) -> None:
    """A legal name that is not the metadata log's."""
    validate_topic_name(name)
    if name == CLUSTER_METADATA_TOPIC:
        raise RuleError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.")


def validate_deletable(name: str) -> None:
    """Any topic but an internal one."""
    if name in INTERNAL_TOPICS:
        raise RuleError(ErrorCode.INVALID_REQUEST, f"Deletion of internal topic {name} is prohibited.")


def validate_topic_configs(configs: Mapping[str, str | None], topic_defaults: Mapping[str, object],
                           tiering: TieringRules | None = None) -> None:
    """Known topic config names with values that parse and agree with each other
    (and, given ``tiering``, Kafka's rules for ``remote.storage.enable``)."""
    unknown = [k for k in configs if k not in TOPIC_CONFIGS]
    if unknown:
        raise RuleError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {unknown[0]}")
    missing = [k for k, v in configs.items() if v is None]
    if missing:
        raise RuleError(ErrorCode.INVALID_CONFIG, f"Null value for topic config {missing[0]}")
    try:
        config = LogConfig.from_props({**topic_defaults, **configs})
    except ValueError as e:
        raise RuleError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if tiering is not None:
        tiering.check(config)


class TieringRules:
    """Kafka's checks of ``remote.storage.enable`` that need more than the topic's own configs.

    - the controller's ``remote.log.storage.system.enable`` must be on to turn it on;
    - internal topics (names starting with ``__``) are never tiered;
    - once on, it may be turned off only together with ``remote.log.delete.on.disable=true``
      (KIP-950: the remote data is then deleted).

    And tierlog's table configs (docs/tables.md): no table while remote segments are encrypted
    at rest (``rsm.config.encryption.enabled``: the Parquet files would hold the records in the
    clear), and a new value schema must evolve the old one.
    """

    def __init__(self, topic: str, system_enabled: bool, was_enabled: bool = False,
                 encryption_enabled: bool = False, before: Mapping[str, str] | None = None):
        self.topic = topic
        self.system_enabled = system_enabled
        self.was_enabled = was_enabled
        self.encryption_enabled = encryption_enabled
        self.before = before or {}

    def check(self, config: LogConfig) -> None:
        if config.remote_storage_enable:
            if not self.system_enabled:
                raise RuleError(ErrorCode.INVALID_CONFIG, "Tiered storage is disabled on the controller "
                                "(remote.log.storage.system.enable=false): remote.storage.enable cannot be set.")
            if self.topic.startswith("__"):
                raise RuleError(ErrorCode.INVALID_CONFIG,
                                f"Internal topic '{self.topic}' cannot be tiered (remote.storage.enable).")
        elif self.was_enabled and not config.values["remote.log.delete.on.disable"]:
            raise RuleError(ErrorCode.INVALID_CONFIG, "remote.storage.enable can be turned off only together with "
                            "remote.log.delete.on.disable=true (its remote data is then deleted).")
        self._check_table(config)

    def _check_table(self, config: LogConfig) -> None:
        if config.values[TABLE_MODE] != OFF and self.encryption_enabled:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"{TABLE_MODE}: remote storage is encrypted at rest "
                            "(rsm.config.encryption.enabled=true) and a table's Parquet files would not be: "
                            "tables are refused on this cluster.")
        try:
            check_schema_change(self.before.get(TABLE_VALUE_SCHEMA) or "", config.values[TABLE_VALUE_SCHEMA])
        except ValueError as e:
            raise RuleError(ErrorCode.INVALID_CONFIG, str(e)) from None


def apply_config_op(configs: dict[str, str], name: str, op: int, value: str | None,
                    known: Mapping[str, Any] | None = TOPIC_CONFIGS) -> None:
    """One IncrementalAlterConfigs operation on ``configs`` (in place).

    ``known``: the config definitions (with ``type`` and ``default``) the
    resource accepts; None accepts any name as a plain string (broker configs).
    """
    spec = None if known is None else known.get(name)
    if known is not None and spec is None:
        raise RuleError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    if op == SET:
        if value is None:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"{name}: SET needs a value")
        configs[name] = value
    elif op == DELETE:
        configs.pop(name, None)
    elif op in (APPEND, SUBTRACT):
        if spec is None or spec.type != "list":
            raise RuleError(ErrorCode.INVALID_CONFIG, f"{name} is not a list; APPEND/SUBTRACT do not apply")
        current = [v for v in configs.get(name, _text(spec.default) or "").split(",") if v]
        items = [v for v in (value or "").split(",") if v]
        current = current + [v for v in items if v not in current] if op == APPEND \
            else [v for v in current if v not in items]
        configs[name] = ",".join(current)
    else:
        raise RuleError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")


def _text(value: object) -> str:
    return ",".join(value) if isinstance(value, (list, tuple)) else ("" if value is None else str(value))
