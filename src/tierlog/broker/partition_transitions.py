"""Leader or follower as the metadata image says (Kafka's ``ReplicaManager.applyDelta`` per partition).

For one hosted partition and its record in the image:

- this broker is the leader at the partition's current epoch: ``Partition.update_leader`` (ISR,
  replicas, fencing, recovery, KIP-1303's bytes threshold changed within the epoch);
- it is the leader at a new epoch: it stops following, ``Partition.become_leader`` with the
  leader's settings (``replica.lag.time.max.ms``, min.insync.replicas, KIP-1303's
  ``leader.election.eligible.local.log.bytes``), followers whose parked fetches name their old
  partitions are woken (``replication.leader_moves``), tiered storage and the coordinators hear;
- another broker leads: ``Partition.become_follower`` (parked requests fail, parked fetches of
  it learn at once that it moved) and the fetcher follows the new leader (none: it stops).

What a transition changed goes to ``apply`` (the replica manager's executor of
``PartitionUpdate``s).  A fenced or unregistered replica is named to the leader state so that it
is not counted for the ISR.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from tierlog.metadata import MetadataImage, PartitionInfo
from tierlog.replication import LeaderConfig, ReplicaFetchers
from tierlog.replication.leader_moves import LeaderMoves

from .fetch_purgatory import FetchPurgatory
from .partition import Partition, PartitionUpdate
from .tiering_hooks import TieringHooks

__all__ = ["ELIGIBLE_BYTES", "PartitionTransitions"]

log = logging.getLogger(__name__)

ELIGIBLE_BYTES = "leader.election.eligible.local.log.bytes"     # KIP-1303


class PartitionTransitions:
    def __init__(self, node_id: int, fetchers: ReplicaFetchers, leader_moves: LeaderMoves[tuple[str, int]],
                 tiering: TieringHooks, fetch_purgatory: FetchPurgatory, topic_defaults: Mapping[str, str],
                 lag_ms: int, broker_epoch: Callable[[], int], clock_ms: Callable[[], int],
                 apply: Callable[[Partition, PartitionUpdate], None]):
        self.node_id = node_id
        self.fetchers = fetchers
        self._leader_moves = leader_moves
        self._tiering = tiering
        self._purgatory = fetch_purgatory
        self._topic_defaults = topic_defaults
        self._lag_ms = lag_ms
        self._broker_epoch = broker_epoch
        self._clock_ms = clock_ms
        self._apply = apply

    def transition(self, image: MetadataImage, part: Partition, p: PartitionInfo) -> None:
        """Make ``part`` leader or follower per its record ``p`` in ``image``."""
        if p.leader == self.node_id:
            self._lead(image, part, p)
        else:
            self._follow(part, p)

    def _lead(self, image: MetadataImage, part: Partition, p: PartitionInfo) -> None:
        now = self._clock_ms()
        fenced = frozenset(r for r in p.replicas
                           if r not in image.brokers or not image.brokers[r].usable) - {self.node_id}
        eligible_bytes = self.eligible_bytes(image, part)
        if part.leads(p.leader_epoch):
            self._apply(part, part.update_leader(p, eligible_bytes, fenced, now))
            return
        self.fetchers.stop_following((part.topic_id, part.index))
        config = LeaderConfig(replica_lag_time_max_ms=self._lag_ms,
                              min_insync_replicas=part.config.min_insync_replicas,
                              eligible_local_log_bytes=eligible_bytes)
        upd = part.become_leader(p, config, self._broker_epoch(), fenced, now)
        for replica in self._leader_moves.became_leader(part.key, p.replicas, self.node_id, now):
            self._purgatory.wake_replica(replica)       # its parked fetch names its old partitions
        self._apply(part, upd)
        self._tiering.on_leader(part)

    def _follow(self, part: Partition, p: PartitionInfo) -> None:
        id_key = (part.topic_id, part.index)
        lost = part.become_follower(p.leader, p.leader_epoch)
        if lost is not None:
            self._apply(part, lost)
            self._purgatory.changed(part.key, id_key)   # parked fetches of it learn at once that it moved
        if p.leader < 0:
            self.fetchers.stop_following(id_key)
            return
        if self.fetchers.become_follower(id_key, p.leader, p.leader_epoch, part.follower_view(),
                                         self._tiering.topic_tiering(part)):
            log.info("%s-%d: following %d at epoch %d", part.topic, part.index, p.leader, p.leader_epoch)
            self._tiering.on_follower(part)

    def eligible_bytes(self, image: MetadataImage, part: Partition) -> int:
        """Effective ``leader.election.eligible.local.log.bytes`` (topic > cluster-wide dynamic >
        server.properties): the leader reports a size crossing it (``local_log_report``)."""
        value = image.config(ELIGIBLE_BYTES, image.topics.get(part.topic), self._topic_defaults.get(ELIGIBLE_BYTES, -1))
        try:
            return int(value)
        except (TypeError, ValueError):
            return -1
