"""Snapshots of the metadata image (KIP-630): image -> records -> image.

``snapshot_records(image)`` yields the records that rebuild ``image`` exactly,
in an order that derives nothing on load: brokers first (their fenced /
controlled-shutdown state written explicitly), broker configs, ACLs, then per topic
controlled-shutdown state written explicitly), broker configs, group configs, then per topic
its TopicRecord, topic ConfigRecords and one PartitionRecord per partition with
the full derived state (leader, epochs, ISR, ELR, last known ELR, recovery
state, KIP-1303 coverage), then the ProducerIdsRecord, then one
UserScramCredentialRecord per SCRAM credential, then one FeatureLevelRecord per
finalized feature, then one ClientQuotaRecord per quota value of each entity.

``load_snapshot(records)`` replays them through a :class:`MetadataDelta` onto an
empty image. For every image built by replaying records,
``load_snapshot(snapshot_records(image)) == image`` (tests/unit/metadata).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from .cluster_records import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_CLIENT_METRICS,
    CONFIG_RESOURCE_GROUP,
    CONFIG_RESOURCE_TOPIC,
    AccessControlEntryRecord,
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    decode,
    encode,
)
from .delta import MetadataDelta
from .feature_records import FeatureLevelRecord
from .image import BrokerInfo, MetadataImage, MetadataProvenance, PartitionInfo

__all__ = [
    "broker_record",
    "load_snapshot",
    "partition_record",
    "snapshot_record_bytes",
    "snapshot_records",
]


def broker_record(b: BrokerInfo) -> RegisterBrokerRecord:
    """The RegisterBrokerRecord that rebuilds ``b`` exactly."""
    return RegisterBrokerRecord(b.node_id, b.incarnation_id, b.epoch, b.endpoints, b.features,
                                b.rack, b.fenced, b.in_controlled_shutdown, log_dirs=b.log_dirs)


def partition_record(topic_id: bytes, p: PartitionInfo) -> PartitionRecord:
    """The PartitionRecord that rebuilds ``p`` exactly (derived state included)."""
    return PartitionRecord(
        p.partition, topic_id, p.replicas, p.isr, p.removing_replicas, p.adding_replicas,
        p.leader, p.leader_recovery_state, p.leader_epoch, p.partition_epoch, p.directories,
        p.elr or None, p.last_known_elr or None, p.local_log)


def snapshot_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    for node_id in sorted(image.brokers):
        yield broker_record(image.brokers[node_id])
    for resource in sorted(image.configs):
        for name, value in image.configs[resource].items():
            yield ConfigRecord(CONFIG_RESOURCE_BROKER, resource, name, value)
    for acl_id in sorted(image.acls):
        yield AccessControlEntryRecord.of(acl_id, image.acls[acl_id])
    for group_id in sorted(image.group_configs):
        for name, value in image.group_configs[group_id].items():
            yield ConfigRecord(CONFIG_RESOURCE_GROUP, group_id, name, value)
    for resource in sorted(image.client_metrics):
        for name, value in image.client_metrics[resource].items():
            yield ConfigRecord(CONFIG_RESOURCE_CLIENT_METRICS, resource, name, value)
    for t in image.topics.values():
        yield TopicRecord(t.name, t.topic_id)
        for name, value in t.configs.items():
            yield ConfigRecord(CONFIG_RESOURCE_TOPIC, t.name, name, value)
        for p in t.partitions:
            yield partition_record(t.topic_id, p)
    if image.producer_ids is not None:
        yield image.producer_ids
    yield from image.scram.records()
    for name, level in sorted(image.features.items()):
        yield FeatureLevelRecord(name, level)
    yield from image.client_quotas.records()


def snapshot_record_bytes(image: MetadataImage) -> Iterator[bytes]:
    for r in snapshot_records(image):
        yield encode(r)


def load_snapshot(records: Iterable[MetadataRecord | bytes | bytearray | memoryview], *, cluster_id: str = "",
                  controller_id: int = -1,
                  provenance: MetadataProvenance | None = None) -> MetadataImage:
    """The image the snapshot ``records`` (record objects or framed bytes) rebuild."""
    delta = MetadataDelta(MetadataImage.empty(cluster_id, controller_id))
    for r in records:
        if isinstance(r, (bytes, bytearray, memoryview)):
            delta.bytes_replayed += len(r)
            delta.replay(decode(r))
        else:
            delta.replay(r)
    return delta.apply(provenance)
