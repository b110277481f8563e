"""The group coordinator's settings (Kafka's broker config names, in ms / counts).

``group.consumer.assignors`` takes the short names ``uniform`` and ``range``
(Kafka takes assignor class names).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from tierlog.metadata.group_rules import (
    GROUP_CONFIG_BROKER_KEYS,
    HEARTBEAT_INTERVAL,
    SESSION_TIMEOUT,
    SHARE_HEARTBEAT_INTERVAL,
    SHARE_SESSION_TIMEOUT,
    broker_default_key,
    broker_group_settings,
    effective_group_configs,
)

from .assignors import ASSIGNORS
from .share_partition import SharePartitionConfig

__all__ = ["GroupConfig", "NodeSettings", "share_partition_config"]


class NodeSettings(Protocol):
    """The node's settings by Kafka key (``tierlog.config.NodeConfig``); a value's type is its key's."""

    def __getitem__(self, name: str, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class GroupConfig:
    initial_rebalance_delay_ms: int = 3000          # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000              # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000           # group.max.session.timeout.ms
    max_size: int = 2147483647                      # group.max.size
    offsets_retention_ms: int = 10080 * 60_000      # offsets.retention.minutes
    retention_check_interval_ms: int = 600000       # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096           # offset.metadata.max.bytes
    # the consumer protocol (KIP-848)
    consumer_heartbeat_interval_ms: int = 5000      # group.consumer.heartbeat.interval.ms
    consumer_session_timeout_ms: int = 45000        # group.consumer.session.timeout.ms
    consumer_max_size: int = 2147483647             # group.consumer.max.size
    consumer_assignors: tuple[str, ...] = ("uniform", "range")     # group.consumer.assignors; the first is the default
    consumer_min_heartbeat_interval_ms: int = 5000  # group.consumer.min.heartbeat.interval.ms
    consumer_max_heartbeat_interval_ms: int = 15000     # group.consumer.max.heartbeat.interval.ms
    consumer_min_session_timeout_ms: int = 45000    # group.consumer.min.session.timeout.ms
    consumer_max_session_timeout_ms: int = 60000    # group.consumer.max.session.timeout.ms
    # share groups (KIP-932)
    share_heartbeat_interval_ms: int = 5000         # group.share.heartbeat.interval.ms
    share_session_timeout_ms: int = 45000           # group.share.session.timeout.ms
    share_max_size: int = 200                       # group.share.max.size
    # the node's defaults and bounds of every group config (metadata.group_rules)
    rule_settings: Mapping[str, int] = field(default_factory=lambda: broker_group_settings({}))

    @classmethod
    def from_node_config(cls, cfg: NodeSettings) -> GroupConfig:
        return cls(
            initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
            max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
            max_size=cfg["group.max.size"],
            offsets_retention_ms=cfg["offsets.retention.minutes"] * 60_000,
            retention_check_interval_ms=cfg["offsets.retention.check.interval.ms"],
            offset_metadata_max_bytes=cfg["offset.metadata.max.bytes"],
            consumer_heartbeat_interval_ms=_within(cfg, "group.consumer.heartbeat.interval.ms"),
            consumer_session_timeout_ms=_within(cfg, "group.consumer.session.timeout.ms"),
            consumer_max_size=cfg["group.consumer.max.size"],
            consumer_assignors=_assignors(cfg["group.consumer.assignors"]),
            consumer_min_heartbeat_interval_ms=cfg["group.consumer.min.heartbeat.interval.ms"],
            consumer_max_heartbeat_interval_ms=cfg["group.consumer.max.heartbeat.interval.ms"],
            consumer_min_session_timeout_ms=cfg["group.consumer.min.session.timeout.ms"],
            consumer_max_session_timeout_ms=cfg["group.consumer.max.session.timeout.ms"],
            share_heartbeat_interval_ms=_within(cfg, "group.share.heartbeat.interval.ms"),
            share_session_timeout_ms=_within(cfg, "group.share.session.timeout.ms"),
            share_max_size=cfg["group.share.max.size"],
            rule_settings={key: cfg[key] for key in GROUP_CONFIG_BROKER_KEYS},
        )

    def for_group(self, overrides: Mapping[str, str]) -> GroupConfig:
        """These settings with a group's dynamic configs (KIP-848 ``consumer.session.timeout.ms``,
        ``consumer.heartbeat.interval.ms``, KIP-932 ``share.session.timeout.ms``,
        ``share.heartbeat.interval.ms``; ``metadata.group_rules``) in place of the broker's."""
        if not overrides:
            return self
        values = effective_group_configs(overrides, self._group_settings())
        return replace(self, consumer_session_timeout_ms=values[SESSION_TIMEOUT],
                       consumer_heartbeat_interval_ms=values[HEARTBEAT_INTERVAL],
                       share_session_timeout_ms=values[SHARE_SESSION_TIMEOUT],
                       share_heartbeat_interval_ms=values[SHARE_HEARTBEAT_INTERVAL])

    def _group_settings(self) -> dict[str, int]:
        k = broker_default_key
        return {**self.rule_settings,
                k(SHARE_HEARTBEAT_INTERVAL): self.share_heartbeat_interval_ms,
                k(SHARE_SESSION_TIMEOUT): self.share_session_timeout_ms,
                k(HEARTBEAT_INTERVAL): self.consumer_heartbeat_interval_ms,
                k(HEARTBEAT_INTERVAL, "min"): self.consumer_min_heartbeat_interval_ms,
                k(HEARTBEAT_INTERVAL, "max"): self.consumer_max_heartbeat_interval_ms,
                k(SESSION_TIMEOUT): self.consumer_session_timeout_ms,
                k(SESSION_TIMEOUT, "min"): self.consumer_min_session_timeout_ms,
                k(SESSION_TIMEOUT, "max"): self.consumer_max_session_timeout_ms}


def share_partition_config(cfg: NodeSettings) -> SharePartitionConfig:
    """A partition leader's share-partition limits (KIP-932), each within its .min. and .max. settings."""
    return SharePartitionConfig(record_lock_duration_ms=_within(cfg, "group.share.record.lock.duration.ms"),
                                delivery_count_limit=_within(cfg, "group.share.delivery.count.limit"),
                                max_record_locks=cfg["group.share.partition.max.record.locks"])


def _within(cfg: NodeSettings, key: str) -> int:
    """``key``'s value, which must lie within its .min. and .max. settings (Kafka refuses to start otherwise)."""
    value: int = cfg[key]
    group, protocol, setting = key.split(".", 2)       # group.consumer.X -> group.consumer.min.X / .max.X
    low, high = cfg[f"{group}.{protocol}.min.{setting}"], cfg[f"{group}.{protocol}.max.{setting}"]
    if not low <= value <= high:
        raise ValueError(f"{key}={value} must be within [{low}, {high}]")
    return value


def _assignors(value: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    unknown = [n for n in names if n not in ASSIGNORS]
    if not names or unknown:
        raise ValueError(f"group.consumer.assignors: unknown {unknown or 'empty list'}; known: {sorted(ASSIGNORS)}")
    return names
