"""Dynamic group configs (KIP-848; Kafka's GroupConfig): names, defaults, bounds, validation.

A group's configs are ConfigRecords of resource type GROUP (32), set with
IncrementalAlterConfigs / AlterConfigs and read with DescribeConfigs.  tierlog
serves the consumer-protocol ones Kafka 4 has:

- ``consumer.session.timeout.ms``: default ``group.consumer.session.timeout.ms``,
  within [``group.consumer.min.session.timeout.ms``, ``group.consumer.max.session.timeout.ms``];
- ``consumer.heartbeat.interval.ms``: default ``group.consumer.heartbeat.interval.ms``,
  within [``group.consumer.min.heartbeat.interval.ms``, ``group.consumer.max.heartbeat.interval.ms``].

Kafka's rules (GroupConfig.validate, run by the controller on the whole set
after the operations, unset keys taking the broker's defaults): an unknown name,
a value that is not an int, below 1 or outside the broker's bounds, or a
session timeout not above the heartbeat interval -> INVALID_CONFIG; the
default resource (an empty group id) -> INVALID_REQUEST.  Kafka's share.* and
streams.* group configs are not served: tierlog has no share or streams groups
(they answer INVALID_CONFIG as unknown names).  The coordinator reads a group's
values clamped to its own bounds (a broker whose bounds differ from the
controller's that accepted the value; Kafka 4.1 clamps the same way).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tierlog.config import BROKER_CONFIGS
from tierlog.protocol.errors import ErrorCode

from .topic_rules import RuleError

__all__ = ["GROUP_CONFIG_BROKER_KEYS", "GROUP_CONFIG_NAMES", "HEARTBEAT_INTERVAL", "SESSION_TIMEOUT",
           "broker_default_key", "broker_group_settings",
           "effective_group_configs", "validate_group_configs"]

SESSION_TIMEOUT, HEARTBEAT_INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
GROUP_CONFIG_NAMES = (HEARTBEAT_INTERVAL, SESSION_TIMEOUT)


def broker_default_key(name: str, bound: str = "") -> str:
    """The broker config holding ``name``'s default (``bound`` "min" / "max": its bounds)."""
    return "group." + name.replace("consumer.", f"consumer.{bound}." if bound else "consumer.")


#: the broker configs the rules read (defaults and bounds)
GROUP_CONFIG_BROKER_KEYS = tuple(broker_default_key(n, b) for n in GROUP_CONFIG_NAMES for b in ("", "min", "max"))


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
        if name not in GROUP_CONFIG_NAMES:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
    values = {name: _parse(name, configs[name]) if name in configs else int(broker[broker_default_key(name)])
              for name in GROUP_CONFIG_NAMES}
    for name in GROUP_CONFIG_NAMES:
        low, high = broker_default_key(name, "min"), broker_default_key(name, "max")
        if values[name] < int(broker[low]):
            raise RuleError(ErrorCode.INVALID_CONFIG, f"{name} must be greater than or equal to {low}")
        if values[name] > int(broker[high]):
            raise RuleError(ErrorCode.INVALID_CONFIG, f"{name} must be less than or equal to {high}")
    if values[SESSION_TIMEOUT] <= values[HEARTBEAT_INTERVAL]:
        raise RuleError(ErrorCode.INVALID_CONFIG, f"{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}")


def _parse(name: str, value: str | None) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise RuleError(ErrorCode.INVALID_CONFIG,
                        f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
    if not 1 <= number <= 2**31 - 1:
        raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: "
                                                  "Value must be at least 1")
    return number


def effective_group_configs(overrides: Mapping[str, str], broker: Mapping[str, int]) -> dict[str, int]:
    """Each of ``GROUP_CONFIG_NAMES``: the group's value (clamped to ``broker``'s bounds), else the
    broker's default.  A malformed stored value counts as unset (the controller validated it)."""
    out = {}
    for name in GROUP_CONFIG_NAMES:
        value = int(broker[broker_default_key(name)])
        try:
            value = int(overrides[name]) if name in overrides else value
        except (TypeError, ValueError):
            pass
        low, high = int(broker[broker_default_key(name, "min")]), int(broker[broker_default_key(name, "max")])
        out[name] = min(max(value, low), high)
    return out
