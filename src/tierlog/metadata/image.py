"""The immutable cluster metadata image: brokers, topics, partitions, configs, ACLs.

Brokers answer Metadata, DescribeCluster and DescribeConfigs from an image and
decide leadership from it; the controller validates requests against it. An
image is never mutated: a change produces a new image (``MetadataDelta.apply``,
or ``with_topic``/``without_topic`` for the single-node store), so a request
handler always sees one consistent view.

Scale (1M partitions): ``topics``, ``topic_ids``, ``brokers`` and the
broker -> topics index are :class:`~tierlog.metadata.pmap.PMap` s, so a new
image shares every untouched topic and every untouched bucket with the old one.

Derived indexes (rebuilt by ``__post_init__`` when not given):

* ``topic_ids``: topic id (16 bytes) -> topic name.
* ``broker_topics``: broker id -> PMap(topic name -> how many of that topic's
  partitions list the broker in ``replicas``). A fence walks only these topics.

``provenance`` says which metadata log prefix the image reflects:
``last_contained_offset`` (inclusive) and its epoch; ``high_watermark_offset``
is the exclusive end (``last_contained_offset + 1``), which is also the end
offset a snapshot of this image carries.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, TypeVar, overload

from .acls import AclBinding
from .client_quotas import ClientQuotasImage
from .cluster_records import (
    BrokerEndpoint,
    BrokerFeature,
    ProducerIdsRecord,
    ReplicaLogCoverage,
)
from .pmap import REMOVE, PMap, Removal
from .scram_image import ScramImage

__all__ = [
    "LEADER_RECOVERED",
    "LEADER_RECOVERING",
    "BrokerEndpoint",
    "BrokerInfo",
    "MetadataImage",
    "MetadataProvenance",
    "PartitionInfo",
    "ReplicaLogCoverage",
    "TopicInfo",
]

ZERO_UUID = bytes(16)
_EMPTY_CONFIGS: Mapping[str, str] = MappingProxyType({})

LEADER_RECOVERED = 0
LEADER_RECOVERING = 1      # elected uncleanly and still recovering

T = TypeVar("T")
#: per broker, topic name -> how many of that topic's partitions list the broker
BrokerTopics = PMap[int, PMap[str, int]]


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    epoch: int = 0
    fenced: bool = False
    in_controlled_shutdown: bool = False
    incarnation_id: bytes = ZERO_UUID
    endpoints: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    log_dirs: tuple[bytes, ...] = ()    # KIP-858: ids of its online log dirs, as registered / last changed

    @property
    def usable(self) -> bool:
        """Registered, unfenced and not shutting down: may lead and be in the ISR."""
        return not self.fenced and not self.in_controlled_shutdown

    def address(self, listener: str | None) -> tuple[str, int] | None:
        """(host, port) on ``listener`` (Kafka's BrokerRegistration.node); None when the broker
        has no endpoint there; the first endpoint when no listener is named or none are known."""
        if listener is None or not self.endpoints:
            return self.host, self.port
        return next(((e.host, e.port) for e in self.endpoints if e.name == listener), None)


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()                   # KIP-966 eligible leader replicas
    last_known_elr: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = LEADER_RECOVERED
    local_log: tuple[ReplicaLogCoverage, ...] = ()   # KIP-1303, sorted by broker id
    directories: tuple[bytes, ...] = ()         # KIP-858: each replica's log dir id, in replica order; () unknown

    def directory(self, broker_id: int) -> bytes | None:
        """The dir id assigned to ``broker_id``'s replica (None: not a replica or not recorded)."""
        if len(self.directories) != len(self.replicas) or broker_id not in self.replicas:
            return None
        return self.directories[self.replicas.index(broker_id)]

    def coverage(self) -> dict[int, ReplicaLogCoverage]:
        return {c.broker_id: c for c in self.local_log}


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: bytes                      # 16 raw bytes
    partitions: tuple[PartitionInfo, ...]
    configs: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class MetadataProvenance:
    last_contained_offset: int = -1      # inclusive
    last_contained_epoch: int = -1
    last_contained_log_time_ms: int = -1

    @property
    def end_offset(self) -> int:         # exclusive
        return self.last_contained_offset + 1


_NO_PROVENANCE = MetadataProvenance()
_NO_SCRAM = ScramImage()
_NO_QUOTAS = ClientQuotasImage()
# a derived field not given: computed in __post_init__ (compared by identity; one sentinel for
# maps of every type)
_DERIVE: PMap[Any, Any] = PMap()


@dataclass(frozen=True, slots=True)
class MetadataImage:
    cluster_id: str
    controller_id: int
    # every mapping is a PMap once constructed (a plain Mapping given is converted)
    brokers: PMap[int, BrokerInfo]
    topics: PMap[str, TopicInfo]
    epoch: int = field(default=0, compare=False)   # bumps on every change
    topic_ids: PMap[bytes, str] = field(default_factory=lambda: _DERIVE)       # (derived)
    broker_topics: BrokerTopics = field(default_factory=lambda: _DERIVE)       # (derived)
    # broker resource name ("" = cluster) -> its dynamic configs (MappingProxyType)
    configs: PMap[str, Mapping[str, str]] = field(default_factory=PMap)
    producer_ids: ProducerIdsRecord | None = None
    provenance: MetadataProvenance = _NO_PROVENANCE
    acls: PMap[bytes, AclBinding] = field(default_factory=PMap)     # KIP-801: by ACL id (16 bytes)
    # group id -> its dynamic configs (MappingProxyType; KIP-848 group configs)
    group_configs: PMap[str, Mapping[str, str]] = field(default_factory=PMap)
    scram: ScramImage = _NO_SCRAM        # SCRAM credentials (metadata.scram_image)
    features: PMap[str, int] = field(default_factory=PMap)  # finalized feature name -> level (FeatureLevelRecord)
    client_quotas: ClientQuotasImage = _NO_QUOTAS   # ClientQuotaRecords (metadata.client_quotas)
    # client metrics resource name -> its configs (MappingProxyType; KIP-714 subscriptions)
    client_metrics: PMap[str, Mapping[str, str]] = field(default_factory=PMap)

    def __post_init__(self) -> None:
        s = object.__setattr__
        if not isinstance(self.acls, PMap):
            s(self, "acls", PMap(self.acls))
        if not isinstance(self.features, PMap):
            s(self, "features", PMap(self.features))
        if not isinstance(self.brokers, PMap):
            s(self, "brokers", PMap(self.brokers))
        if not isinstance(self.topics, PMap):
            s(self, "topics", PMap(self.topics))
        if not isinstance(self.configs, PMap):
            s(self, "configs", PMap(self.configs))
        if not isinstance(self.group_configs, PMap):
            s(self, "group_configs", PMap(self.group_configs))
        if not isinstance(self.client_metrics, PMap):
            s(self, "client_metrics", PMap(self.client_metrics))
        if self.topic_ids is _DERIVE:
            s(self, "topic_ids", PMap((t.topic_id, t.name) for t in self.topics.values()))
        if self.broker_topics is _DERIVE:
            s(self, "broker_topics", reindex(PMap(), [(None, t) for t in self.topics.values()]))

    @classmethod
    def empty(cls, cluster_id: str = "", controller_id: int = -1,
              brokers: Iterable[BrokerInfo] = ()) -> MetadataImage:
        return cls(cluster_id, controller_id, PMap({b.node_id: b for b in brokers}), PMap())

    # -- lookups -------------------------------------------------------------
    @property
    def high_watermark_offset(self) -> int:
        """Exclusive end offset of the metadata log this image reflects."""
        return self.provenance.end_offset

    @property
    def next_producer_id(self) -> int:
        return self.producer_ids.next_producer_id if self.producer_ids else 0

    def topic_by_id(self, topic_id: bytes) -> TopicInfo | None:
        name = self.topic_ids.get(bytes(topic_id))
        return None if name is None else self.topics.get(name)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            return None
        return t.partitions[partition]

    def usable_brokers(self) -> frozenset[int]:
        """Registered, unfenced, not in controlled shutdown."""
        return frozenset(b.node_id for b in self.brokers.values() if b.usable)

    def topics_on(self, broker_id: int) -> Iterator[TopicInfo]:
        for name in self.broker_topics.get(broker_id, ()):
            yield self.topics[name]

    def partitions_on(self, broker_id: int) -> Iterator[tuple[TopicInfo, PartitionInfo]]:
        """(topic, partition) of every partition listing ``broker_id`` as a replica."""
        for t in self.topics_on(broker_id):
            for p in t.partitions:
                if broker_id in p.replicas:
                    yield t, p

    def partitions_led_by(self, broker_id: int) -> Iterator[tuple[TopicInfo, PartitionInfo]]:
        for t, p in self.partitions_on(broker_id):
            if p.leader == broker_id:
                yield t, p

    def cluster_configs(self) -> Mapping[str, str]:
        """Cluster-wide broker configs (ConfigRecords with resource name "")."""
        return self.configs.get("", _EMPTY_CONFIGS)

    def broker_configs(self, node_id: int) -> Mapping[str, str]:
        return self.configs.get(str(node_id), _EMPTY_CONFIGS)

    def group_config(self, group_id: str) -> Mapping[str, str]:
        """A group's dynamic configs (ConfigRecords of resource type GROUP)."""
        return self.group_configs.get(group_id, _EMPTY_CONFIGS)

    @overload
    def config(self, name: str, topic: TopicInfo | None = None) -> str | None: ...
    @overload
    def config(self, name: str, topic: TopicInfo | None, default: T) -> str | T: ...

    def config(self, name: str, topic: TopicInfo | None = None, default: object = None) -> object:
        """A topic override, else the cluster-wide broker config, else ``default``."""
        if topic is not None and name in topic.configs:
            return topic.configs[name]
        return self.cluster_configs().get(name, default)

    # -- direct edits (tests and tools; the cluster changes images through deltas) --
    def with_topic(self, topic: TopicInfo) -> MetadataImage:
        old = self.topics.get(topic.name)
        ids = self.topic_ids
        if old is not None and old.topic_id != topic.topic_id:
            ids = ids.remove(old.topic_id)
        return replace(self, topics=self.topics.set(topic.name, topic),
                       topic_ids=ids.set(topic.topic_id, topic.name),
                       broker_topics=reindex(self.broker_topics, [(old, topic)]),
                       epoch=self.epoch + 1)

    def without_topic(self, name: str) -> MetadataImage:
        old = self.topics.get(name)
        if old is None:
            return replace(self, epoch=self.epoch + 1)
        return replace(self, topics=self.topics.remove(name),
                       topic_ids=self.topic_ids.remove(old.topic_id),
                       broker_topics=reindex(self.broker_topics, [(old, None)]),
                       epoch=self.epoch + 1)


def _counts(topic: TopicInfo | None) -> dict[int, int]:
    counts: dict[int, int] = {}
    if topic is not None:
        for p in topic.partitions:
            for b in p.replicas:
                counts[b] = counts.get(b, 0) + 1
    return counts


def reindex(broker_topics: BrokerTopics,
            changes: Iterable[tuple[TopicInfo | None, TopicInfo | None]]) -> BrokerTopics:
    """``broker_topics`` updated for ``changes``: pairs (old TopicInfo|None, new|None)."""
    per_broker: dict[int, dict[str, int | Removal]] = {}
    for old, new in changes:
        before, after = _counts(old), _counts(new)
        if before == after and (old is None or new is None or old.name == new.name):
            continue
        for b in before.keys() | after.keys():
            n = after.get(b, 0)
            if old is not None and (n == 0 or new is None or new.name != old.name):
                per_broker.setdefault(b, {})[old.name] = REMOVE
            if new is not None and n:
                per_broker.setdefault(b, {})[new.name] = n
    if not per_broker:
        return broker_topics
    out: dict[int, PMap[str, int] | Removal] = {}
    for b, ch in per_broker.items():
        m = broker_topics.get(b, _EMPTY_PMAP).evolve(ch)
        out[b] = m if len(m) else REMOVE
    return broker_topics.evolve(out)


_EMPTY_PMAP: PMap[str, int] = PMap()
