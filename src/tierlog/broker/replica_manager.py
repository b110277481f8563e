"""The partitions this broker hosts, kept in line with the metadata image.

``apply_image`` creates the logs of partitions assigned to this node, deletes
the logs of topics that are gone and pushes topic config changes to the logs.
Appends wake fetches that long-poll on a partition (``wait_for_data``).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterable

from tierlog.metadata import MetadataImage, TopicInfo
from tierlog.storage import LogConfig, LogManager

from .partition import Partition

__all__ = ["ReplicaManager"]

log = logging.getLogger(__name__)


class ReplicaManager:
    def __init__(self, node_id: int, logs: LogManager, topic_defaults: dict[str, str],
                 clock_ms: Callable[[], int]):
        self.node_id = node_id
        self.logs = logs
        self.topic_defaults = topic_defaults
        self._clock_ms = clock_ms
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._watchers: dict[tuple[str, int], set[asyncio.Future]] = {}

    def get(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def log_config(self, topic: TopicInfo) -> LogConfig:
        return LogConfig.from_props({**self.topic_defaults, **topic.configs})

    # -- following the metadata image --------------------------------------------
    def apply_image(self, image: MetadataImage) -> None:
        wanted = {}
        for topic in image.topics.values():
            for p in topic.partitions:
                if self.node_id in p.replicas:
                    wanted[(topic.name, p.partition)] = (topic, p)
        for key in [k for k in self.partitions if k not in wanted]:
            self._drop(key)
        for key in [k for k in self.logs.logs() if k not in wanted]:
            log.info("deleting log of %s-%d: not in the metadata image", *key)
            self.logs.delete(*key)
        for key, (topic, p) in wanted.items():
            self._ensure(topic, p)

    def _ensure(self, topic: TopicInfo, p) -> None:
        key = (topic.name, p.partition)
        config = self.log_config(topic)
        part = self.partitions.get(key)
        if part is None:
            plog = self.logs.get(*key) or self.logs.create(topic.name, p.partition, topic.topic_id,
                                                           config, self._clock_ms())
            self.partitions[key] = Partition(topic.name, p.partition, topic.topic_id, plog,
                                             p.leader, p.leader_epoch)
            return
        part.leader_id, part.leader_epoch = p.leader, p.leader_epoch
        if part.log.config != config:
            part.log.update_config(config)

    def _drop(self, key) -> None:
        self.partitions.pop(key, None)
        for fut in self._watchers.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    # -- appends and long polls -------------------------------------------------
    def notify_append(self, key: tuple[str, int]) -> None:
        for fut in self._watchers.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    async def wait_for_data(self, keys: Iterable[tuple[str, int]], timeout_s: float) -> None:
        """Return when any of ``keys`` gets an append, or after ``timeout_s``."""
        fut = asyncio.get_running_loop().create_future()
        keys = list(keys)
        for k in keys:
            self._watchers.setdefault(k, set()).add(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            for k in keys:
                s = self._watchers.get(k)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._watchers[k]
