"""One partition replica hosted by this broker: its log plus its leadership state.

With a single replica the high watermark is the log end offset: every appended
batch is already on the whole ISR (this node).  Replication will move the high
watermark to the smallest log end offset in the ISR.
"""
from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark      # no transactions: nothing is pending

    def check_epoch(self, current_leader_epoch: int) -> int:
        """Kafka's fencing of a request's CurrentLeaderEpoch: 0, FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH."""
        if current_leader_epoch == -1 or current_leader_epoch == self.leader_epoch:
            return 0
        return 74 if current_leader_epoch < self.leader_epoch else 75
