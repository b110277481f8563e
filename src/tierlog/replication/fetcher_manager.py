"""All replica fetchers of one broker: one ``FetcherState`` per source (leader) broker.

Kafka's ReplicaFetcherManager with one fetcher per source broker
(num.replica.fetchers = 1).  Metadata changes drive it:

- ``become_follower(key, leader_id, leader_epoch, log)``: start following, or
  move the partition to the new leader's fetcher, or bump the epoch in place.
  An older or equal epoch for the same leader is ignored.
- ``stop_following(key)``: this broker became leader or lost the replica.
- ``set_tiering(key, tiering)``: the topic's tiering traits (KIP-1023) changed.
- ``last_tiered_offset_enable``: ``follower.fetch.last.tiered.offset.enable``
  (KIP-1023, cluster-wide and dynamic), pushed to every fetcher.

A fetcher without partitions is removed (the shell closes its connection).
"""
from __future__ import annotations

from .fetch_actions import PartitionKey
from .fetcher import FetcherConfig, FetcherState
from .follower import FollowerLog
from .tiered_start import NOT_TIERED, TopicTiering

__all__ = ["ReplicaFetchers"]


class ReplicaFetchers:
    def __init__(self, replica_id: int, replica_epoch: int = -1, config: FetcherConfig | None = None) -> None:
        self.replica_id = replica_id
        self.replica_epoch = replica_epoch
        self.config = config or FetcherConfig()
        self.fetchers: dict[int, FetcherState] = {}
        self._leader_of: dict[PartitionKey, int] = {}
        self._last_tiered_offset_enable = False

    @property
    def last_tiered_offset_enable(self) -> bool:
        return self._last_tiered_offset_enable

    def update_last_tiered_offset_enable(self, value: bool) -> None:
        """follower.fetch.last.tiered.offset.enable changed (a dynamic config): every fetcher uses it."""
        self._last_tiered_offset_enable = value
        for fetcher in self.fetchers.values():
            fetcher.update_last_tiered_offset_enable(value)

    def use_replica_epoch(self, broker_epoch: int) -> None:
        """The broker registered with ``broker_epoch``: the fetchers created from now on send it."""
        self.replica_epoch = broker_epoch

    def set_tiering(self, key: PartitionKey, tiering: TopicTiering) -> None:
        fetcher = self.fetcher_for(key)
        if fetcher is not None and fetcher.partitions[key].tiering != tiering:
            fetcher.set_tiering(key, tiering)

    def fetcher_for(self, key: PartitionKey) -> FetcherState | None:
        leader = self._leader_of.get(key)
        return None if leader is None else self.fetchers[leader]

    def become_follower(self, key: PartitionKey, leader_id: int, leader_epoch: int, log: FollowerLog,
                        tiering: TopicTiering = NOT_TIERED) -> bool:
        """True if the partition (re)starts fetching."""
        assert leader_id != self.replica_id, "a leader does not follow itself"
        current = self._leader_of.get(key)
        if current == leader_id:
            state = self.fetchers[leader_id].partitions[key]
            if state.tiering != tiering:
                self.fetchers[leader_id].set_tiering(key, tiering)
            if leader_epoch <= state.leader_epoch:
                return False
            self.fetchers[leader_id].set_leader_epoch(key, leader_epoch)
            return True
        self.stop_following(key)
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = FetcherState(leader_id, self.replica_id, self.replica_epoch,
                                                              self.config)
            fetcher.update_last_tiered_offset_enable(self._last_tiered_offset_enable)
        fetcher.add_partition(key, leader_epoch, log, tiering)
        self._leader_of[key] = leader_id
        return True

    def stop_following(self, key: PartitionKey) -> None:
        leader = self._leader_of.pop(key, None)
        if leader is None:
            return
        fetcher = self.fetchers[leader]
        fetcher.remove_partition(key)
        if not fetcher.partitions:
            del self.fetchers[leader]
