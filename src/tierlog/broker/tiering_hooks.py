"""The replica manager's hooks for tiered storage and the coordinators: who hears of leadership,
and what the replica fetchers are told of tiering (KIP-405, KIP-1023).

- Leadership listeners: the RemoteLogManager (when tiered storage is on) first, then the
  group and transaction coordinators in the order they were added, hear of every partition
  this broker starts leading (a new epoch), starts following (a new leader) or stops hosting.
- ``topic_tiering``: a followed partition's traits for the fetcher's tiered-start rules
  (tiered here *and* for the topic, compacted).
- ``last_tiered_offset_enable``: KIP-1023's ``follower.fetch.last.tiered.offset.enable``,
  this broker's dynamic value, else the cluster-wide dynamic value, else server.properties.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from tierlog.replication import TopicTiering

if TYPE_CHECKING:
    from tierlog.metadata import MetadataImage

    from .partition import Partition

__all__ = ["LAST_TIERED_OFFSET_ENABLE", "LeadershipListener", "TieringHooks", "as_bool"]

LAST_TIERED_OFFSET_ENABLE = "follower.fetch.last.tiered.offset.enable"      # KIP-1023


class LeadershipListener(Protocol):
    """A view of leadership (``broker.remote``'s RemoteLogManager and the coordinators implement it)."""

    def on_leader(self, part: Partition) -> None: ...          # became leader at a new epoch
    def on_follower(self, part: Partition) -> None: ...        # started following a (new) leader
    def on_stopped(self, part: Partition, topic_deleted: bool) -> None: ...   # no longer hosted here


class TieringHooks:
    def __init__(self, node_id: int, remote_log_manager: LeadershipListener | None,
                 static_last_tiered_offset_enable: bool) -> None:
        """``remote_log_manager``: None when tiered storage is off on this broker."""
        self._node_id = node_id
        self._tiered_here = remote_log_manager is not None
        self._static_enable = static_last_tiered_offset_enable
        self._listeners: list[LeadershipListener] = [remote_log_manager] if remote_log_manager is not None else []

    def add_listener(self, listener: LeadershipListener) -> None:
        self._listeners.append(listener)

    def on_leader(self, part: Partition) -> None:
        for listener in self._listeners:
            listener.on_leader(part)

    def on_follower(self, part: Partition) -> None:
        for listener in self._listeners:
            listener.on_follower(part)

    def on_stopped(self, part: Partition, topic_deleted: bool) -> None:
        for listener in self._listeners:
            listener.on_stopped(part, topic_deleted)

    def topic_tiering(self, part: Partition) -> TopicTiering:
        config = part.config
        return TopicTiering(tiered=self._tiered_here and config.remote_storage_enable,
                            compacted=config.compact_enabled)

    def last_tiered_offset_enable(self, image: MetadataImage) -> bool:
        """KIP-1023 "Dynamically configurable as cluster-default for all brokers in the cluster"."""
        for configs in (image.broker_configs(self._node_id), image.cluster_configs()):
            if LAST_TIERED_OFFSET_ENABLE in configs:
                return as_bool(configs[LAST_TIERED_OFFSET_ENABLE])
        return self._static_enable


def as_bool(value) -> bool:
    return value is True or str(value).strip().lower() == "true"
