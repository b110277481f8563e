"""AlterPartition (key 56) payloads from a partition leader to the controller.

One ``AlterPartitionItem`` per partition; ``build_alter_partition_request``
groups items into one request per controller call, the way Kafka's
AlterPartitionManager batches them.  Version 4 (ours, KIP-1303 draft,
"Protocol Changes") adds LocalLogStartTimestamp and LocalLogSizeBytes to each
NewIsrWithEpochs entry; every ISR member, the leader included, is listed with
its broker epoch and last known local-log values (-1 when unknown).
Field names are those of ``protocol/messages/alter_partition.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .local_log_report import LocalLog

__all__ = ["ALTER_PARTITION_VERSION", "AlterPartitionItem", "IsrMember", "build_alter_partition_request"]

ALTER_PARTITION_VERSION = 4


@dataclass(frozen=True, slots=True)
class IsrMember:
    broker_id: int
    broker_epoch: int
    local_log: LocalLog

    def as_dict(self) -> dict[str, Any]:
        return {"BrokerId": self.broker_id, "BrokerEpoch": self.broker_epoch,
                "LocalLogStartTimestamp": self.local_log.start_timestamp,
                "LocalLogSizeBytes": self.local_log.size_bytes}


@dataclass(frozen=True, slots=True)
class AlterPartitionItem:
    topic_id: bytes
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[IsrMember, ...]
    reason: str                      # "expand", "shrink" or "report" (logging only)

    @property
    def isr_ids(self) -> tuple[int, ...]:
        return tuple(m.broker_id for m in self.new_isr)

    def as_partition_dict(self) -> dict[str, Any]:
        return {"PartitionIndex": self.partition, "LeaderEpoch": self.leader_epoch,
                "NewIsrWithEpochs": [m.as_dict() for m in self.new_isr],
                "LeaderRecoveryState": 0, "PartitionEpoch": self.partition_epoch}


def build_alter_partition_request(broker_id: int, broker_epoch: int, items: list[AlterPartitionItem]) -> dict[str, Any]:
    """The AlterPartition v4 request dict for ``items`` (at most one per partition)."""
    topics: dict[bytes, list[dict[str, Any]]] = {}
    seen: set[tuple[bytes, int]] = set()
    for item in items:
        assert (item.topic_id, item.partition) not in seen, "one item per partition"
        seen.add((item.topic_id, item.partition))
        topics.setdefault(item.topic_id, []).append(item.as_partition_dict())
    return {"BrokerId": broker_id, "BrokerEpoch": broker_epoch,
            "Topics": [{"TopicId": tid, "Partitions": parts} for tid, parts in topics.items()]}
