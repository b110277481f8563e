"""What a leader knows about one follower replica (Kafka's ``Replica`` / ``ReplicaState``).

Fields come from the follower's Fetch requests: the fetch offset is its log end
offset (LEO), its LogStartOffset, its broker epoch (ReplicaState.ReplicaEpoch)
and, per the KIP-1303 draft ("Tracking Local Log State", "Leader changes"), its
LocalLogStartTimestamp and LocalLogSizeBytes.

Caught-up rule (Kafka's ``lastCaughtUpTimeMs``): a fetch at time t with fetch
offset o from a follower whose previous fetch happened at t0 when the leader's
LEO was e0 moves ``last_caught_up_time_ms`` to

- t   if o >= the leader's LEO now (the follower has everything),
- t0  else if o >= e0 (it had everything the leader had at its last fetch),
- unchanged otherwise,

never backwards.  ``is_caught_up`` is "LEO equals the leader's LEO, or caught up
within ``replica.lag.time.max.ms``".

With fetch sessions (KIP-227) a follower names a partition only when its fetch
offset moves, so a Fetch that leaves it out is a fetch at the same offset:
``credit_unnamed_fetch`` applies the rule for it when the leader appends (the
only time the outcome can differ), with the follower's latest Fetch time.

Transitions: ``reset`` on becoming leader (a follower in the ISR counts as caught
up now, others as never); ``update_fetch`` on every valid follower fetch that
names the partition; ``credit_unnamed_fetch`` on every leader append.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["UNKNOWN", "ReplicaState"]

UNKNOWN = -1


@dataclass(slots=True)
class ReplicaState:
    replica_id: int
    log_end_offset: int = UNKNOWN            # exclusive; -1 until the first fetch in this epoch
    log_start_offset: int = UNKNOWN
    last_fetch_time_ms: int = 0
    last_fetch_leader_leo: int = UNKNOWN     # leader's LEO at the previous fetch
    last_caught_up_time_ms: int = 0
    broker_epoch: int = UNKNOWN
    local_log_start_timestamp: int = UNKNOWN  # KIP-1303, as last reported in a Fetch
    local_log_size_bytes: int = UNKNOWN       # KIP-1303, as last reported in a Fetch

    def reset(self, now_ms: int, in_isr: bool) -> None:
        """A new leader epoch: offsets unknown until the follower fetches again."""
        self.log_end_offset = UNKNOWN
        self.log_start_offset = UNKNOWN
        self.last_fetch_leader_leo = UNKNOWN
        self.last_fetch_time_ms = 0
        self.last_caught_up_time_ms = now_ms if in_isr else 0

    def update_fetch(self, fetch_offset: int, log_start_offset: int, now_ms: int, leader_leo: int,
                     broker_epoch: int, local_log_start_timestamp: int, local_log_size_bytes: int) -> None:
        assert fetch_offset >= 0, fetch_offset
        if fetch_offset >= leader_leo:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, now_ms)
        elif self.last_fetch_leader_leo != UNKNOWN and fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_time_ms = now_ms
        if broker_epoch != UNKNOWN:
            self.broker_epoch = broker_epoch
        self.local_log_start_timestamp = local_log_start_timestamp
        self.local_log_size_bytes = local_log_size_bytes

    def credit_unnamed_fetch(self, leader_leo_before: int, fetch_ms: int) -> None:
        """The leader appended past ``leader_leo_before``; this follower's latest Fetch (at ``fetch_ms``,
        in a session that did not name the partition because its position had not moved) had it all."""
        if fetch_ms != UNKNOWN and self.log_end_offset != UNKNOWN and self.log_end_offset >= leader_leo_before:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_ms)
            self.last_fetch_time_ms = max(self.last_fetch_time_ms, fetch_ms)
            self.last_fetch_leader_leo = leader_leo_before

    def is_caught_up(self, leader_leo: int, now_ms: int, max_lag_ms: int) -> bool:
        return self.log_end_offset == leader_leo or now_ms - self.last_caught_up_time_ms <= max_lag_ms
