"""The group coordinator's settings (Kafka's broker config names, in ms / counts)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GroupConfig"]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    initial_rebalance_delay_ms: int = 3000          # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000              # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000           # group.max.session.timeout.ms
    max_size: int = 2147483647                      # group.max.size
    offsets_retention_ms: int = 10080 * 60_000      # offsets.retention.minutes
    retention_check_interval_ms: int = 600000       # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096           # offset.metadata.max.bytes

    @classmethod
    def from_node_config(cls, cfg) -> GroupConfig:
        return cls(
            initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
            max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
            max_size=cfg["group.max.size"],
            offsets_retention_ms=cfg["offsets.retention.minutes"] * 60_000,
            retention_check_interval_ms=cfg["offsets.retention.check.interval.ms"],
            offset_metadata_max_bytes=cfg["offset.metadata.max.bytes"],
        )
