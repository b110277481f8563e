"""All replica fetchers of one broker: one ``FetcherState`` per source (leader) broker.

Kafka's ReplicaFetcherManager with one fetcher per source broker
(num.replica.fetchers = 1).  Metadata changes drive it:

- ``become_follower(key, leader_id, leader_epoch, log)``: start following, or
  move the partition to the new leader's fetcher, or bump the epoch in place.
  An older or equal epoch for the same leader is ignored.
- ``stop_following(key)``: this broker became leader or lost the replica.

A fetcher without partitions is removed (the shell closes its connection).
"""
from __future__ import annotations

from .fetch_actions import PartitionKey
from .fetcher import FetcherConfig, FetcherState
from .follower import FollowerLog

__all__ = ["ReplicaFetchers"]


class ReplicaFetchers:
    def __init__(self, replica_id: int, replica_epoch: int = -1, config: FetcherConfig | None = None) -> None:
        self.replica_id = replica_id
        self.replica_epoch = replica_epoch
        self.config = config or FetcherConfig()
        self.fetchers: dict[int, FetcherState] = {}
        self._leader_of: dict[PartitionKey, int] = {}

    def fetcher_for(self, key: PartitionKey) -> FetcherState | None:
        leader = self._leader_of.get(key)
        return None if leader is None else self.fetchers[leader]

    def become_follower(self, key: PartitionKey, leader_id: int, leader_epoch: int, log: FollowerLog) -> bool:
        """True if the partition (re)starts fetching."""
        assert leader_id != self.replica_id, "a leader does not follow itself"
        current = self._leader_of.get(key)
        if current == leader_id:
            state = self.fetchers[leader_id].partitions[key]
            if leader_epoch <= state.leader_epoch:
                return False
            self.fetchers[leader_id].set_leader_epoch(key, leader_epoch)
            return True
        self.stop_following(key)
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = FetcherState(leader_id, self.replica_id, self.replica_epoch,
                                                              self.config)
        fetcher.add_partition(key, leader_epoch, log)
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
