"""The immutable cluster metadata image: brokers, topics, partitions, configs.

Brokers answer Metadata, DescribeCluster and DescribeConfigs from an image and
decide leadership from it.  An image is never mutated: a change produces a new
image (``with_topic``/``without_topic``), so a request handler always sees one
consistent view.  Today ``LocalMetadataStore`` produces images for a single
combined-mode node; the metadata quorum will produce them from its log.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

__all__ = ["BrokerInfo", "PartitionInfo", "TopicInfo", "MetadataImage"]


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int = 0


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: bytes                      # 16 raw bytes
    partitions: tuple[PartitionInfo, ...]
    configs: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def with_configs(self, configs: dict[str, str]) -> "TopicInfo":
        return replace(self, configs=MappingProxyType(dict(configs)))


@dataclass(frozen=True, slots=True)
class MetadataImage:
    cluster_id: str
    controller_id: int
    brokers: MappingProxyType            # node_id -> BrokerInfo
    topics: MappingProxyType             # name -> TopicInfo
    epoch: int = 0                       # bumps on every change

    @classmethod
    def empty(cls, cluster_id: str, controller_id: int, brokers: list[BrokerInfo]) -> "MetadataImage":
        return cls(cluster_id, controller_id, MappingProxyType({b.node_id: b for b in brokers}),
                   MappingProxyType({}))

    def topic_by_id(self, topic_id: bytes) -> TopicInfo | None:
        for t in self.topics.values():
            if t.topic_id == topic_id:
                return t
        return None

    def with_topic(self, topic: TopicInfo) -> "MetadataImage":
        topics = dict(self.topics)
        topics[topic.name] = topic
        return replace(self, topics=MappingProxyType(topics), epoch=self.epoch + 1)

    def without_topic(self, name: str) -> "MetadataImage":
        topics = {k: v for k, v in self.topics.items() if k != name}
        return replace(self, topics=MappingProxyType(topics), epoch=self.epoch + 1)
