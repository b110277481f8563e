"""A Fetch request as typed parameters (Kafka's ``FetchParams``): what the Fetch handler builds
from the wire's request before anything else sees it, so no request dict travels past it.

Per partition a ``fetch_session.SessionPartition`` (its position, byte limit, leader epochs,
and for a follower its log start and KIP-1303 local log); for the whole request who fetches
(a replica id and broker epoch, or a consumer), how long and for how much it may wait, its byte
budget, its isolation, and its fetch session (KIP-227) with the partitions it forgets.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .fetch_session import SessionPartition
from .partition import FetchIsolation

__all__ = ["TOPIC_IDS_FROM", "FetchParams"]

TOPIC_IDS_FROM = 13         # Fetch v13+ names topics by id


@dataclass(slots=True)
class FetchParams:
    version: int
    replica_id: int                       # a follower's broker id; -1 for a consumer
    replica_epoch: int                    # a follower's broker epoch (ReplicaState, v15+); else -1
    max_wait_ms: int                      # already capped by the broker's fetch.wait.max.ms
    min_bytes: int
    max_bytes: int                        # already capped by the broker's fetch.max.bytes
    isolation_level: int                  # the wire's IsolationLevel (0 read_uncommitted, 1 read_committed)
    session_id: int
    session_epoch: int
    partitions: list[SessionPartition] = field(default_factory=list)
    forgotten: list[tuple[object, int]] = field(default_factory=list)

    @property
    def from_follower(self) -> bool:
        return self.replica_id >= 0

    @property
    def by_topic_id(self) -> bool:
        return self.version >= TOPIC_IDS_FROM

    @property
    def isolation(self) -> FetchIsolation:
        """How far this fetch reads (``FetchIsolation.of``: a replica to the log end)."""
        return FetchIsolation.of(self.replica_id, self.isolation_level)

    @property
    def read_committed_consumer(self) -> bool:
        """A consumer at read_committed: its answers list aborted transactions (KIP-98)."""
        return self.replica_id < 0 and self.isolation is FetchIsolation.TXN_COMMITTED
