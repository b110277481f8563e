"""Creating the coordinators' internal topics through the controller (FindCoordinator's first
request of a key type, the share persister's first share-partition): ``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``, never tiered, with a replication factor of at
most the live brokers.
"""
from __future__ import annotations

from tierlog.protocol.api import ApiKey

from .share_coordinator import SHARE_STATE_TOPIC

__all__ = ["create_internal_topic", "create_share_state_topic", "replication_factor"]


def create_share_state_topic(broker) -> None:
    """``__share_group_state`` created through the controller, when this broker should ask."""
    shares = broker.share_states
    if shares.should_create_topic():
        rf = replication_factor(broker, shares.replication_factor)
        # delete, never compact (as Kafka): every ShareUpdate of a share-partition has the same key
        configs = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1",
                   "segment.bytes": str(shares.segment_bytes), "min.insync.replicas": str(max(1, min(shares.min_isr, rf))),
                   "compression.type": "producer"}
        create_internal_topic(broker, SHARE_STATE_TOPIC, shares.num_partitions, rf, configs)


def replication_factor(broker, wanted: int) -> int:
    live = sum(1 for b in broker.image.brokers.values() if not b.fenced)
    return max(1, min(wanted, live))


def create_internal_topic(broker, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
    configs = {**configs, "remote.storage.enable": "false"}      # internal: never tiered
    body = {"Topics": [{"Name": name, "NumPartitions": partitions, "ReplicationFactor": rf,
                        "Assignments": [], "Configs": [{"Name": k, "Value": v} for k, v in configs.items()]}],
            "timeoutMs": 10000, "validateOnly": False}
    broker.background.spawn(broker.controller_channel.send(ApiKey.CREATE_TOPICS, body, 10.0, 7), name=f"create-{name}")
