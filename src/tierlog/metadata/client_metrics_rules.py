"""KIP-714 client metrics subscriptions: the CLIENT_METRICS config resource (type 16), sans-IO.

A subscription is a named config resource (``kafka-configs --entity-type client-metrics``)
with Kafka's three configs (ClientMetricsConfigs):

- ``metrics``: a list of metric name prefixes the matching clients push (``*``: all of them;
  empty: none);
- ``interval.ms``: how often they push, 100..3600000 (default 300000);
- ``match``: a list of ``selector=regex`` the client must all match (regexes match the whole
  value); selectors ``client_instance_id``, ``client_id``, ``client_software_name``,
  ``client_software_version``, ``client_source_address``, ``client_source_port``; empty: every
  client.

``validate_client_metrics_configs`` is the controller's check (INVALID_CONFIG, as Kafka's
ClientMetricsConfigs.validate); ``client_subscription`` is what a client gets: the union of the
metrics of every subscription that matches it and the smallest push interval among them
(Kafka's ClientMetricsManager.createSubscriptionInfo), with a subscription id that changes
whenever either does (a CRC-32C, as Kafka's computeSubscriptionId).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import crc32c

from tierlog.protocol.errors import ErrorCode

from .topic_rules import RuleError

__all__ = ["ALL_METRICS", "CLIENT_METRICS_CONFIGS", "DEFAULT_INTERVAL_MS", "INTERVAL_MS_MAX", "INTERVAL_MS_MIN",
           "MATCH_SELECTORS", "ClientMetricsConfig", "ClientSubscription", "client_subscription",
           "validate_client_metrics_configs"]

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
DEFAULT_INTERVAL_MS = 300_000
INTERVAL_MS_MIN, INTERVAL_MS_MAX = 100, 3_600_000
ALL_METRICS = "*"
MATCH_SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
                   "client_source_address", "client_source_port")


@dataclass(frozen=True)
class ClientMetricsConfig:
    """One config of the resource (``type`` and ``default`` as ``topic_rules.apply_config_op`` reads them)."""

    name: str
    type: str
    default: object
    doc: str


CLIENT_METRICS_CONFIGS: Mapping[str, ClientMetricsConfig] = {c.name: c for c in (
    ClientMetricsConfig(METRICS, "list", "", "Telemetry metric name prefixes the matching clients push, "
                                             "'*' for all of them."),
    ClientMetricsConfig(INTERVAL_MS, "int", DEFAULT_INTERVAL_MS, "How often the matching clients push their "
                                                                 "metrics, in milliseconds."),
    ClientMetricsConfig(MATCH, "list", "", "selector=regex pairs a client must all match: "
                                           + ", ".join(MATCH_SELECTORS) + "."),
)}


def _items(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def validate_client_metrics_configs(name: str, configs: Mapping[str, str]) -> None:
    """A subscription's configs after an alter (RuleError INVALID_REQUEST / INVALID_CONFIG)."""
    if not name:
        raise RuleError(ErrorCode.INVALID_REQUEST, "Client metrics resource name must not be empty.")
    for key in configs:
        if key not in CLIENT_METRICS_CONFIGS:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"Unknown client metrics configuration: {key}")
    interval = configs.get(INTERVAL_MS)
    if interval is not None:
        try:
            ok = INTERVAL_MS_MIN <= int(interval.strip()) <= INTERVAL_MS_MAX
        except ValueError:
            ok = False
        if not ok:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid value {interval} for configuration {INTERVAL_MS}: must be an int "
                                f"in [{INTERVAL_MS_MIN}, {INTERVAL_MS_MAX}].")
    _patterns(configs.get(MATCH))


def _patterns(value: str | None) -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for item in _items(value):
        selector, eq, regex = item.partition("=")
        if not eq or selector.strip() not in MATCH_SELECTORS:
            raise RuleError(ErrorCode.INVALID_CONFIG, f"Invalid client matching pattern {item!r}: want "
                                                      f"selector=regex with a selector of {', '.join(MATCH_SELECTORS)}.")
        try:
            out.append((selector.strip(), re.compile(regex.strip())))
        except re.error as e:
            raise RuleError(ErrorCode.INVALID_CONFIG,
                            f"Invalid regular expression in client matching pattern {item!r}: {e}") from None
    return out


@dataclass(frozen=True)
class ClientSubscription:
    """What one client instance is asked to push."""

    subscription_id: int
    metrics: tuple[str, ...]        # prefixes; ("",) all metrics; (): none
    push_interval_ms: int
    subscriptions: tuple[str, ...]  # the resource names that matched


def _matches(patterns: list[tuple[str, re.Pattern[str]]], client: Mapping[str, str]) -> bool:
    return all(p.fullmatch(client.get(selector, "")) is not None for selector, p in patterns)


def client_subscription(subscriptions: Mapping[str, Mapping[str, str]], client: Mapping[str, str]) -> ClientSubscription:
    """The union of the subscriptions matching ``client`` (selector -> value; missing: ""), its
    smallest interval, and its id: the CRC-32C of the metrics, the interval and the client
    instance id (a signed int32, as the wire carries it)."""
    metrics: list[str] = []
    interval = 0
    names = []
    for name in sorted(subscriptions):
        configs = subscriptions[name]
        try:
            patterns = _patterns(configs.get(MATCH))
        except RuleError:
            continue
        if not _matches(patterns, client):
            continue
        names.append(name)
        metrics += [m for m in _items(configs.get(METRICS)) if m not in metrics]
        sub_interval = int(configs.get(INTERVAL_MS, DEFAULT_INTERVAL_MS))
        interval = sub_interval if interval == 0 else min(interval, sub_interval)
    requested = ("",) if ALL_METRICS in metrics else tuple(sorted(metrics))
    interval = interval or DEFAULT_INTERVAL_MS
    text = f"{','.join(requested)}|{interval}|{client.get('client_instance_id', '')}".encode()
    value = crc32c.crc32c(text)
    return ClientSubscription(value - (1 << 32) if value >= 1 << 31 else value, requested, interval, tuple(names))
