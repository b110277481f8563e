"""What only a leader tracks: replica progress, the high watermark, check-quorum and
KIP-630's log begin offset advance.

Offsets here are end offsets (exclusive): a replica whose ``end_offset`` is 10 holds
offsets 0-9 matching the leader.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierlog.raft.types import OffsetAndEpoch, RaftConfig

__all__ = ["LeaderProgress", "ReplicaProgress"]


@dataclass
class ReplicaProgress:
    replica_id: int
    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    leader_end_at_last_fetch: int = -1


class LeaderProgress:
    def __init__(self, node_id: int, voters: frozenset[int], epoch_start_offset: int,
                 high_watermark: int, config: RaftConfig, now_ms: int):
        self.node_id = node_id
        self.config = config
        self.epoch_start_offset = epoch_start_offset
        self.high_watermark = high_watermark
        # every voter gets a grace period of one check-quorum timeout from election
        self.voters = {v: ReplicaProgress(v, last_fetch_ms=now_ms) for v in voters}
        self.observers: dict[int, ReplicaProgress] = {}
        self.majority = len(voters) // 2 + 1
        if node_id not in self.voters:
            self.observers[node_id] = ReplicaProgress(node_id, last_fetch_ms=now_ms)

    def set_voters(self, voters: frozenset[int], now_ms: int) -> bool:
        """The voter set in effect changed (KIP-853): progress moves between voters and
        observers; a voter the leader never heard from gets a check-quorum grace period.
        True if the high watermark moved (it never goes down)."""
        everyone = {**self.observers, **self.voters}
        self.voters = {v: everyone.get(v) or ReplicaProgress(v, last_fetch_ms=now_ms) for v in sorted(voters)}
        self.observers = {r: p for r, p in everyone.items() if r not in voters}
        self.majority = len(voters) // 2 + 1
        return self._maybe_advance_hw()

    def progress_of(self, replica_id: int) -> ReplicaProgress | None:
        return self.voters.get(replica_id) or self.observers.get(replica_id)

    def update_local(self, flushed_end_offset: int, now_ms: int) -> bool:
        me = self.voters.get(self.node_id) or self.observers[self.node_id]
        me.end_offset = flushed_end_offset
        me.last_fetch_ms = me.last_caught_up_ms = now_ms
        return self._maybe_advance_hw()

    def update_replica(self, replica_id: int, fetch_offset: int, leader_end_offset: int, now_ms: int) -> bool:
        """Record a valid Fetch; True if the high watermark moved."""
        p = self.voters.get(replica_id)
        if p is None:
            p = self.observers.setdefault(replica_id, ReplicaProgress(replica_id))
        # caught up: at the leader's end now, or at least where the leader's end was at the
        # previous fetch (then caught up as of that fetch), so a replica of a busy leader counts
        if fetch_offset >= leader_end_offset:
            p.last_caught_up_ms = now_ms
        elif 0 < p.leader_end_at_last_fetch <= fetch_offset:
            p.last_caught_up_ms = max(p.last_caught_up_ms, p.last_fetch_ms)
        p.end_offset = fetch_offset
        p.last_fetch_ms = now_ms
        p.leader_end_at_last_fetch = leader_end_offset
        return replica_id in self.voters and self._maybe_advance_hw()

    def touch(self, replica_id: int, now_ms: int) -> None:
        """A FetchSnapshot counts as contact for check-quorum."""
        p = self.voters.get(replica_id) or self.observers.setdefault(replica_id, ReplicaProgress(replica_id))
        p.last_fetch_ms = now_ms

    def _maybe_advance_hw(self) -> bool:
        ends = sorted((p.end_offset for p in self.voters.values()), reverse=True)
        candidate = ends[self.majority - 1]
        # only an offset of the leader's own epoch commits (Raft's rule): the LeaderChange
        # record at epoch_start_offset must be held by a majority first
        if candidate > self.epoch_start_offset and candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def quorum_alive(self, now_ms: int) -> bool:
        """Check-quorum: a majority (the leader counts) fetched within the timeout."""
        horizon = now_ms - self.config.check_quorum_timeout_ms
        alive = sum(1 for v, p in self.voters.items() if v == self.node_id or p.last_fetch_ms >= horizon)
        return alive >= self.majority

    def check_quorum_deadline(self) -> int:
        others = sorted((p.last_fetch_ms for v, p in self.voters.items() if v != self.node_id), reverse=True)
        needed = self.majority - (1 if self.node_id in self.voters else 0)
        if needed <= 0:
            return 1 << 62
        return others[needed - 1] + self.config.check_quorum_timeout_ms + 1

    def live_replicas(self, now_ms: int) -> list[ReplicaProgress]:
        """Followers and observers heard from within max.replication.lag.ms."""
        horizon = now_ms - self.config.max_replication_lag_ms
        return [p for p in (*self.voters.values(), *self.observers.values())
                if p.replica_id != self.node_id and p.last_fetch_ms >= horizon]

    def lbo_target(self, snapshot_ids: list[OffsetAndEpoch], lbo: int, lbo_since_ms: int,
                   now_ms: int) -> OffsetAndEpoch | None:
        """KIP-630 'When to Increase the Log Begin Offset'.

        X may become the LBO when a snapshot ends at X (it covers X - 1), X is committed,
        and either every live replica already has X, or the current LBO is
        max.replication.lag.ms old. Returns the largest such snapshot id.
        """
        eligible = [s for s in snapshot_ids if lbo < s.offset <= self.high_watermark]
        if not eligible:
            return None
        if now_ms - lbo_since_ms >= self.config.max_replication_lag_ms:
            return eligible[-1]
        live = self.live_replicas(now_ms)
        floor = min((p.end_offset for p in live), default=self.high_watermark)
        covered = [s for s in eligible if s.offset <= floor]
        return covered[-1] if covered else None

    def lbo_deadline(self, lbo_since_ms: int) -> int:
        return lbo_since_ms + self.config.max_replication_lag_ms

    def preferred_successors(self) -> tuple[int, ...]:
        """Voters other than the leader, most caught up first (EndQuorumEpoch)."""
        others = [p for v, p in self.voters.items() if v != self.node_id]
        others.sort(key=lambda p: (-p.end_offset, p.replica_id))
        return tuple(p.replica_id for p in others)
