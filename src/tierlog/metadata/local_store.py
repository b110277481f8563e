"""Single-node metadata store for combined mode, until the metadata quorum lands.

It owns the cluster's truth for one node: topics (ids, partitions, configs),
written to ``cluster-metadata.json`` in the first log dir through a temporary
file, fsync and an atomic rename *before* the new image is published.  The
interface (``image``, ``create_topic``, ``delete_topic``, ``alter_topic_configs``)
is what the broker calls; the quorum controller will offer the same calls.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from types import MappingProxyType
from .image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo

__all__ = ["LocalMetadataStore", "MetadataError"]

STATE_FILE = "cluster-metadata.json"


class MetadataError(Exception):
    """A metadata change was refused; ``error_code`` is Kafka's error code."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code


class LocalMetadataStore:
    def __init__(self, directory: Path, cluster_id: str, broker: BrokerInfo):
        self._path = Path(directory) / STATE_FILE
        self.image = MetadataImage.empty(cluster_id, broker.node_id, [broker])
        self.next_producer_id = 0           # first producer id not yet handed out in a block
        if self._path.exists():
            self.image = self._load(self.image)

    def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                     configs: dict[str, str]) -> TopicInfo:
        if name in self.image.topics:
            raise MetadataError(36, f"Topic '{name}' already exists.")  # TOPIC_ALREADY_EXISTS
        live = sorted(self.image.brokers)
        if replication_factor > len(live):
            raise MetadataError(38, f"Replication factor {replication_factor} is larger than "
                                    f"the {len(live)} available broker(s).")  # INVALID_REPLICATION_FACTOR
        parts = tuple(_place(p, replication_factor, live) for p in range(num_partitions))
        topic = TopicInfo(name, uuid.uuid4().bytes, parts, MappingProxyType(dict(configs)))
        self._publish(self.image.with_topic(topic))
        return topic

    def delete_topic(self, name: str) -> TopicInfo:
        topic = self.image.topics.get(name)
        if topic is None:
            raise MetadataError(3, f"Topic '{name}' does not exist.")  # UNKNOWN_TOPIC_OR_PARTITION
        self._publish(self.image.without_topic(name))
        return topic

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> TopicInfo:
        topic = self.image.topics.get(name)
        if topic is None:
            raise MetadataError(3, f"Topic '{name}' does not exist.")
        topic = topic.with_configs(configs)
        self._publish(self.image.with_topic(topic))
        return topic

    def allocate_producer_ids(self, block_size: int) -> range:
        """A block of producer ids no one has had, durable before it is handed out."""
        block = range(self.next_producer_id, self.next_producer_id + block_size)
        self.next_producer_id = block.stop
        self._write(self.image)
        return block

    def _publish(self, image: MetadataImage) -> None:
        self._write(image)          # durable before anyone sees it
        self.image = image

    def _write(self, image: MetadataImage) -> None:
        doc = {"cluster_id": image.cluster_id, "next_producer_id": self.next_producer_id,
               "topics": [_topic_to_json(t) for t in image.topics.values()]}
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)
        dfd = os.open(self._path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def _load(self, image: MetadataImage) -> MetadataImage:
        doc = json.loads(self._path.read_text())
        self.next_producer_id = doc.get("next_producer_id", 0)
        for t in doc["topics"]:
            image = image.with_topic(_topic_from_json(t))
        return image


def _place(partition: int, rf: int, brokers: list[int]) -> PartitionInfo:
    replicas = tuple(brokers[(partition + i) % len(brokers)] for i in range(rf))
    return PartitionInfo(partition, replicas[0], 0, replicas, replicas)


def _topic_to_json(t: TopicInfo) -> dict:
    return {"name": t.name, "id": t.topic_id.hex(), "configs": dict(t.configs),
            "partitions": [[p.partition, p.leader, p.leader_epoch, list(p.replicas), list(p.isr)]
                           for p in t.partitions]}


def _topic_from_json(d: dict) -> TopicInfo:
    parts = tuple(PartitionInfo(p, leader, epoch, tuple(r), tuple(i)) for p, leader, epoch, r, i in d["partitions"])
    return TopicInfo(d["name"], bytes.fromhex(d["id"]), parts, MappingProxyType(d["configs"]))
