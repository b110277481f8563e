"""ControllerConfig: the settings the quorum controller acts on, by Kafka's names."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tierlog.config import ConfigError
from tierlog.metadata.group_rules import broker_group_settings

__all__ = ["PRODUCER_ID_BLOCK_SIZE", "ControllerConfig"]

PRODUCER_ID_BLOCK_SIZE = 1000       # Kafka's block size for AllocateProducerIds


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    cluster_id: str | None = None                   # None: accept any ClusterId in registrations
    broker_session_timeout_ms: int = 9000           # broker.session.timeout.ms
    num_partitions: int = 1                         # num.partitions
    default_replication_factor: int = 1             # default.replication.factor
    min_insync_replicas: int = 1                    # min.insync.replicas (cluster default)
    delete_topic_enable: bool = True                # delete.topic.enable
    unclean_leader_election_enable: bool = False    # unclean.leader.election.enable
    eligible_local_log_ms: int = -1                 # leader.election.eligible.local.log.ms (KIP-1303)
    eligible_local_log_bytes: int = -1              # leader.election.eligible.local.log.bytes (KIP-1303)
    max_idle_interval_ms: int = 500                 # metadata.max.idle.interval.ms (NoOpRecord); 0 = off
    auto_leader_rebalance_enable: bool = True       # auto.leader.rebalance.enable
    leader_imbalance_per_broker_percentage: int = 10    # leader.imbalance.per.broker.percentage
    leader_imbalance_check_interval_ms: int = 300_000   # leader.imbalance.check.interval.seconds, in ms
    remote_log_storage_system_enable: bool = False  # remote.log.storage.system.enable (KIP-405)
    remote_storage_encryption_enable: bool = False  # rsm.config.encryption.enabled: no tables (docs/tables.md)
    topic_defaults: Mapping[str, object] = field(default_factory=dict)  # topic config name -> broker-level default
    group_settings: Mapping[str, int] = field(default_factory=lambda: broker_group_settings({}))  # group.consumer.*

    @classmethod
    def from_props(cls, props: Mapping[str, object], topic_defaults: Mapping[str, object] | None = None,
                   cluster_id: str | None = None) -> ControllerConfig:
        """From a mapping of Kafka config names (a NodeConfig's values or a plain dict)."""
        def get(name: str, default: int | bool) -> int | float | str:
            return _setting(props, name, default)

        if cluster_id is None:
            given = props.get("cluster.id")
            cluster_id = None if given is None else str(given)
        return cls(
            cluster_id=cluster_id,
            broker_session_timeout_ms=int(get("broker.session.timeout.ms", 9000)),
            num_partitions=int(get("num.partitions", 1)),
            default_replication_factor=int(get("default.replication.factor", 1)),
            min_insync_replicas=int(get("min.insync.replicas", 1)),
            delete_topic_enable=_bool(get("delete.topic.enable", True)),
            unclean_leader_election_enable=_bool(get("unclean.leader.election.enable", False)),
            eligible_local_log_ms=int(get("leader.election.eligible.local.log.ms", -1)),
            eligible_local_log_bytes=int(get("leader.election.eligible.local.log.bytes", -1)),
            max_idle_interval_ms=int(get("metadata.max.idle.interval.ms", 500)),
            auto_leader_rebalance_enable=_bool(get("auto.leader.rebalance.enable", True)),
            leader_imbalance_per_broker_percentage=int(get("leader.imbalance.per.broker.percentage", 10)),
            leader_imbalance_check_interval_ms=_check_interval_ms(get("leader.imbalance.check.interval.seconds", 300)),
            remote_log_storage_system_enable=_bool(get("remote.log.storage.system.enable", False)),
            remote_storage_encryption_enable=_bool(get("rsm.config.encryption.enabled", False)),
            topic_defaults=dict(topic_defaults or {}),
            group_settings=broker_group_settings(props),
        )


def _setting(props: Mapping[str, object], name: str, default: int | bool) -> int | float | str:
    """``props[name]``, the default when missing or None (a NodeConfig's unset value)."""
    value = props.get(name)
    if value is None:
        return default
    if not isinstance(value, int | float | str):
        raise ConfigError(f"{name}: want a number, a boolean or a string, got {value!r}")
    return value


def _check_interval_ms(seconds: float | str) -> int:
    """``leader.imbalance.check.interval.seconds`` in ms; Kafka requires at least 1."""
    value = int(seconds)
    if value < 1:
        raise ValueError(f"leader.imbalance.check.interval.seconds must be at least 1, got {value}")
    return value * 1000


def _bool(v: float | str) -> bool:
    return v if isinstance(v, bool) else str(v).strip().lower() == "true"
