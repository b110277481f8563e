"""Which hosted partitions a metadata image changes, and what each becomes (Kafka's
``ReplicaManager.applyDelta``, its choice of partitions; the replica manager executes it).

``steps(image, delta)`` yields one step per partition visited (``apply_slices`` runs them in
slices of the event loop's time):

- With the ``delta`` that led to ``image`` from the image applied last, only the topics it
  changed are visited, and of those only the partitions whose record changed (all of them when
  the topic's configs did): a commit's cost is what it changed, not every hosted partition.
- Without a delta, or when brokers or cluster configs changed (fencing, KIP-1023's dynamic
  ``follower.fetch.last.tiered.offset.enable``), every partition is: those no longer assigned
  here are unhosted, logs on disk that the image does not assign are deleted, and every
  assigned partition is hosted again (leader or follower at the image's epoch).
- A topic deleted, or recreated under another id, unhosts its old partitions (the logs of a
  deleted topic go with them).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from tierlog.metadata import MetadataImage, PartitionInfo, TopicInfo
from tierlog.storage import LogConfig

__all__ = ["ImageFollower", "PartitionHost"]

Key = tuple[str, int]


class PartitionHost(Protocol):
    """What the image follower drives (``ReplicaManager``)."""

    node_id: int

    def hosted(self) -> Iterable[Key]: ...                      # partitions hosted now
    def stored_logs(self) -> Iterable[Key]: ...                 # logs on disk
    def log_config(self, topic: TopicInfo) -> LogConfig: ...    # its partitions' config (once per topic)
    def host(self, image: MetadataImage, topic: TopicInfo, p: PartitionInfo,
             config: LogConfig) -> None: ...                   # leader or follower per p
    def unhost(self, key: Key, topic_deleted: bool) -> None: ...    # stop hosting it, delete its log
    def drop(self, key: Key, topic_deleted: bool) -> None: ...      # stop hosting it, keep its log
    def delete_log(self, key: Key) -> None: ...
    def follow_cluster(self, image: MetadataImage) -> None: ...     # cluster-wide settings (KIP-1023)


class ImageFollower:
    def __init__(self, host: PartitionHost) -> None:
        self._host = host
        self._image = MetadataImage.empty("", -1)       # the image applied last

    @property
    def image(self) -> MetadataImage:
        """The image applied last (its steps may still be running)."""
        return self._image

    def steps(self, image: MetadataImage, delta=None) -> Iterator[None]:
        """The steps that follow ``image`` (``delta``: what led to it, if known)."""
        base, self._image = self._image, image
        if delta is None or delta.image is not base or delta.changed_brokers or delta.changed_configs:
            return self._all(image)
        return self._topics(image, base, delta.changed_topics)

    def _topics(self, image: MetadataImage, base: MetadataImage, names) -> Iterator[None]:
        for name in names:
            yield from self._topic(image, base.topics.get(name), image.topics.get(name))

    def _all(self, image: MetadataImage) -> Iterator[None]:
        host, node_id = self._host, self._host.node_id
        wanted = {(topic.name, p.partition): (topic, p)
                  for topic in image.topics.values() for p in topic.partitions if node_id in p.replicas}
        for key in [k for k in host.hosted() if k not in wanted]:
            host.drop(key, topic_deleted=key[0] not in image.topics)
            yield
        for key in [k for k in host.stored_logs() if k not in wanted]:
            host.delete_log(key)
            yield
        host.follow_cluster(image)
        configs: dict[str, LogConfig] = {}
        for topic, p in wanted.values():
            config = configs.get(topic.name) or configs.setdefault(topic.name, host.log_config(topic))
            host.host(image, topic, p, config)
            yield

    def _topic(self, image: MetadataImage, old: TopicInfo | None, new: TopicInfo | None) -> Iterator[None]:
        """One changed topic: its partitions whose record changed (all of them when its configs did)."""
        host = self._host
        if new is None or (old is not None and old.topic_id != new.topic_id):
            for p in old.partitions if old is not None else ():
                assert old is not None      # the loop runs over old's partitions only
                host.unhost((old.name, p.partition), topic_deleted=new is None)
                yield
            if new is None:
                return
            old = None
        same_configs = old is not None and old.configs == new.configs
        config = host.log_config(new)
        for p in new.partitions:
            if same_configs and old is not None and p.partition < len(old.partitions) and old.partitions[p.partition] is p:
                continue
            if host.node_id in p.replicas:
                host.host(image, new, p, config)
            else:
                host.unhost((new.name, p.partition), topic_deleted=False)
            yield
