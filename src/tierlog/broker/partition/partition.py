"""One partition replica hosted by this broker: its log plus its leadership state.

The metadata image decides the mode (``ReplicaManager``):

- leader: ``leader_state`` (a ``replication.LeaderState``) owns the high
  watermark, the smallest log end offset over the ISR; ``purgatory`` parks
  acks=all produces until the high watermark covers them, ``deletes``
  DeleteRecords until the ISR's log starts reach the new log start;
- follower: the replica fetcher appends the leader's batches and sets
  ``follower_hw`` to min(leader's high watermark, local log end offset).

The high watermark is checkpointed (``replication-offset-checkpoint``, written by
``ReplicaManager``): a replica opened from disk once replication is running
starts with min(checkpointed HW, log end offset), 0 if none (``follower_hw``;
a new leader's ``LeaderState`` starts from it), and a follower's value is
replaced by the leader's on the first fetch.  ``follower_hw`` = -1 (replication
not started) means the log end offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tierlog.protocol.errors import ErrorCode
from tierlog.replication import AcksPurgatory, DeleteRecordsPurgatory, LeaderState
from tierlog.storage import Log

__all__ = ["Partition"]


@dataclass(slots=True)
class Partition:
    topic: str
    index: int
    topic_id: bytes
    log: Log
    leader_id: int
    leader_epoch: int
    leader_state: LeaderState | None = None
    purgatory: AcksPurgatory = field(default_factory=AcksPurgatory)
    deletes: DeleteRecordsPurgatory = field(default_factory=DeleteRecordsPurgatory)
    follower_hw: int = -1                 # -1: not set yet, the log end offset is used
    moved_away_epoch: int = -1            # the leader epoch at which this broker stopped leading it

    @property
    def moved_away(self) -> bool:
        """This broker led the partition until its current leader epoch began: its image is not
        behind on who leads now (``broker.apis.stale_metadata``)."""
        return self.leader_state is None and self.moved_away_epoch == self.leader_epoch

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    @property
    def high_watermark(self) -> int:
        leo = self.log.log_end_offset
        if self.leader_state is not None:
            return min(self.leader_state.high_watermark, leo)
        return leo if self.follower_hw < 0 else min(self.follower_hw, leo)

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark      # no transactions: nothing is pending

    def check_epoch(self, current_leader_epoch: int) -> int:
        """Kafka's fencing of a request's CurrentLeaderEpoch: NONE, FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH."""
        if current_leader_epoch == -1 or current_leader_epoch == self.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH
