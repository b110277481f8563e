"""Dynamic group configs (Kafka's GroupConfig; KIP-848, KIP-932): names, defaults, bounds, validation.

A group's configs are ConfigRecords of resource type GROUP (32), set with
IncrementalAlterConfigs / AlterConfigs and read with DescribeConfigs.  tierlog serves:

- consumer groups (KIP-848): ``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``;
- share groups (KIP-932, Kafka 4.2's names): ``share.session.timeout.ms``,
  ``share.heartbeat.interval.ms``, ``share.record.lock.duration.ms`` (at least 1000),
  ``share.delivery.count.limit`` (at least 2), ``share.auto.offset.reset`` (``latest``, the
  default, ``earliest`` or ``by_duration:<ISO-8601 duration>``, KIP-1106),
  ``share.isolation.level`` (``read_uncommitted``, the default, or ``read_committed``);
- beyond Kafka 4.2: ``errors.deadletterqueue.topic.name``, the share group's dead-letter topic
  as KIP-1191 (voting) plans it; empty (the default) means none.  KIP-1191's
  ``dlq.`` name prefix and its topic-side opt-in are not enforced.

An int config's default is its broker config (``group.<protocol>.<setting>``) and it must lie
within the broker's ``group.<protocol>.min.<setting>`` / ``.max.`` bounds.

Kafka's rules (GroupConfig.validate, run by the controller on the whole set after the
operations, unset keys taking the broker's defaults): an unknown name, a value that is not an
int, below its least value or outside the broker's bounds, a string not among its values, or a
session timeout not above its heartbeat interval -> INVALID_CONFIG; the default resource (an
empty group id) -> INVALID_REQUEST.  The coordinator and the partition leaders read a group's
values clamped to their own bounds (``effective_group_configs``; a broker whose bounds differ
from the controller's that accepted the value; Kafka 4.1 clamps the same way).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tierlog.config import BROKER_CONFIGS
from tierlog.protocol.errors import ErrorCode

from .topic_rules import RuleError, validate_topic_name

__all__ = ["GROUP_CONFIGS", "GROUP_CONFIG_BROKER_KEYS", "GROUP_CONFIG_NAMES", "HEARTBEAT_INTERVAL",
           "SESSION_TIMEOUT", "SHARE_AUTO_OFFSET_RESET", "SHARE_DELIVERY_COUNT_LIMIT", "SHARE_DLQ_TOPIC",
           "SHARE_HEARTBEAT_INTERVAL", "SHARE_ISOLATION_LEVEL", "SHARE_RECORD_LOCK_DURATION",
           "SHARE_SESSION_TIMEOUT", "GroupConfigSpec", "broker_default_key", "broker_group_settings",
           "by_duration_ms", "effective_group_configs", "validate_group_configs"]

SESSION_TIMEOUT, HEARTBEAT_INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL = "share.session.timeout.ms", "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION, SHARE_DELIVERY_COUNT_LIMIT = "share.record.lock.duration.ms", "share.delivery.count.limit"
SHARE_AUTO_OFFSET_RESET, SHARE_ISOLATION_LEVEL = "share.auto.offset.reset", "share.isolation.level"
SHARE_DLQ_TOPIC = "errors.deadletterqueue.topic.name"         # KIP-1191 (planned)
_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


@dataclass(frozen=True)
class GroupConfigSpec:
    type: str                       # "int" or "string"
    least: int = 1                  # an int's smallest value
    bounded: bool = False           # an int within the broker's .min. / .max. settings
    default: str = ""               # a string's default
    doc: str = ""


def broker_default_key(name: str, bound: str = "") -> str:
    """The broker config holding ``name``'s default (``bound`` "min" / "max": its bounds):
    consumer.session.timeout.ms -> group.consumer.session.timeout.ms / group.consumer.min.session.timeout.ms."""
    protocol, setting = name.split(".", 1)
    return f"group.{protocol}.{bound}.{setting}" if bound else f"group.{protocol}.{setting}"


GROUP_CONFIGS: dict[str, GroupConfigSpec] = {
    HEARTBEAT_INTERVAL: GroupConfigSpec("int", bounded=True),
    SESSION_TIMEOUT: GroupConfigSpec("int", bounded=True),
    SHARE_HEARTBEAT_INTERVAL: GroupConfigSpec("int", bounded=True),
    SHARE_SESSION_TIMEOUT: GroupConfigSpec("int", bounded=True),
    SHARE_RECORD_LOCK_DURATION: GroupConfigSpec("int", least=1000, bounded=True),
    SHARE_DELIVERY_COUNT_LIMIT: GroupConfigSpec("int", least=2, bounded=True),
    SHARE_AUTO_OFFSET_RESET: GroupConfigSpec("string", default="latest", doc=(
        "Where a share-partition starts: latest, earliest or by_duration:<ISO-8601 duration> before now.")),
    SHARE_ISOLATION_LEVEL: GroupConfigSpec("string", default="read_uncommitted", doc=(
        "read_committed: the share group delivers only committed transactional records.")),
    SHARE_DLQ_TOPIC: GroupConfigSpec("string", default="", doc=(
        "The topic records archived after too many deliveries or rejected are copied to (KIP-1191); "
        "empty: none.")),
}
GROUP_CONFIG_NAMES = tuple(GROUP_CONFIGS)
_ISOLATION = ("read_uncommitted", "read_committed")

#: the broker configs the rules read (defaults and bounds)
GROUP_CONFIG_BROKER_KEYS = tuple(broker_default_key(n, b) for n, s in GROUP_CONFIGS.items() if s.bounded
                                 for b in ("", "min", "max"))
_PAIRS = ((SESSION_TIMEOUT, HEARTBEAT_INTERVAL), (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL))


def broker_group_settings(props: Mapping[str, Any]) -> dict[str, int]:
    """``GROUP_CONFIG_BROKER_KEYS`` from a node config or a plain mapping (missing: the built-in default)."""
    out = {}
    for key in GROUP_CONFIG_BROKER_KEYS:
        try:
            value = props[key]
        except KeyError:
            value = None
        out[key] = int(BROKER_CONFIGS[key].default if value is None else value)
    return out


def validate_group_configs(configs: Mapping[str, str], broker: Mapping[str, int]) -> None:
    """Raise RuleError unless ``configs`` (a group's whole dynamic set) is valid against the
    broker configs ``broker`` (``GROUP_CONFIG_BROKER_KEYS`` -> int)."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
    values: dict[str, int] = {}
    for name, spec in GROUP_CONFIGS.items():
        if spec.type == "string":
            if name in configs:
                _check_string(name, str(configs[name]))
            continue
        values[name] = _parse(name, configs[name], spec.least) if name in configs \
            else int(broker[broker_default_key(name)])
        low, high = broker_default_key(name, "min"), broker_default_key(name, "max")
        if values[name] < int(broker[low]):
            raise RuleError(ErrorCode.INVALID_CONFIG, f"{name} must be greater than or equal to {low}")
        if values[name] > int(broker[high]):
            raise RuleError(ErrorCode.INVALID_CONFIG, f"{name} must be less than or equal to {high}")
    for session, interval in _PAIRS:
        if values[session] <= values[interval]:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"{session} must be greater than {interval}")


def _check_string(name: str, value: str) -> None:
    if name == SHARE_ISOLATION_LEVEL and value not in _ISOLATION:
        raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: "
                                                  f"String must be one of: {', '.join(_ISOLATION)}")
    if name == SHARE_AUTO_OFFSET_RESET and not _valid_reset(value):
        raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: "
                                                  "latest, earliest or by_duration:<ISO-8601 duration>")
    if name == SHARE_DLQ_TOPIC and value:
        try:
            validate_topic_name(value)
        except RuleError as e:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: {e}") \
                from None


def _valid_reset(value: str) -> bool:
    """KIP-932 / KIP-1106: latest, earliest, or by_duration:PnDTnHnMn.nS (not negative)."""
    if value.lower() in ("latest", "earliest"):
        return True
    kind, _, duration = value.partition(":")
    return kind.lower() == "by_duration" and duration not in ("P", "PT") and bool(_DURATION.match(duration))


def by_duration_ms(value: str) -> int | None:
    """The milliseconds of a ``by_duration:`` reset (None for latest / earliest)."""
    kind, _, duration = value.partition(":")
    match = _DURATION.match(duration) if kind.lower() == "by_duration" else None
    if match is None:
        return None
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


def _parse(name: str, value: str | None, least: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise RuleError(ErrorCode.INVALID_CONFIG,
                        f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
    if not least <= number <= 2**31 - 1:
        raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: "
                                                  f"Value must be at least {least}")
    return number


def effective_group_configs(overrides: Mapping[str, str], broker: Mapping[str, int]) -> dict[str, Any]:
    """Each of ``GROUP_CONFIG_NAMES``: the group's value (an int clamped to ``broker``'s bounds), else
    the broker's default.  A malformed stored value counts as unset (the controller validated it)."""
    out: dict[str, Any] = {}
    for name, spec in GROUP_CONFIGS.items():
        if spec.type == "string":
            out[name] = str(overrides.get(name) or spec.default)
            continue
        value = int(broker[broker_default_key(name)])
        try:
            value = int(overrides[name]) if name in overrides else value
        except (TypeError, ValueError):
            pass
        low, high = int(broker[broker_default_key(name, "min")]), int(broker[broker_default_key(name, "max")])
        out[name] = min(max(value, low), high)
    return out
