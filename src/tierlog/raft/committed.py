"""What the Raft core hands its shell as committed, in order (etcd's ``Ready.CommittedEntries``).

``Output.committed`` is a list of three kinds of item, to be applied in the order given:

- ``CommittedBatch``: one committed batch of the log;
- ``SnapshotReader`` (raft/snapshots.py): a snapshot to load, replacing the state built so far;
- ``LeaderAndEpoch`` (raft/types.py): the quorum has a new (leader, epoch); a leader is
  announced only after every batch before its epoch's start offset.

The core never calls the state machine; the shell passes these items on (in a real
process to the node's CommitApplier, server/commit_applier.py), one at a time through
``hand_to`` if it has the three ``CommittedHandler`` methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tierlog.raft.snapshots import SnapshotReader
from tierlog.raft.types import LeaderAndEpoch

__all__ = ["Committed", "CommittedBatch", "CommittedHandler", "hand_to"]


@dataclass(frozen=True)
class CommittedBatch:
    """One committed batch. ``records`` are the upper layer's record values; a control
    batch (``control=True``, e.g. the LeaderChange record a new leader writes) has no
    records and its raw values in ``control_records``. Offsets are inclusive."""

    base_offset: int
    last_offset: int
    epoch: int
    append_timestamp: int
    records: list[bytes]
    control: bool = False
    control_records: list[bytes] = field(default_factory=list)

    @property
    def size_estimate(self) -> int:
        """Bytes of record values, for bounding what one Output carries."""
        return sum(map(len, self.records)) + sum(map(len, self.control_records))


#: one item of ``Output.committed``
Committed = CommittedBatch | SnapshotReader | LeaderAndEpoch


class CommittedHandler(Protocol):
    """A state machine as the shell drives it (never the core)."""

    def handle_commit(self, batch: CommittedBatch) -> None: ...

    def handle_load_snapshot(self, reader: SnapshotReader) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


def hand_to(handler: CommittedHandler, item: Committed) -> None:
    """Pass one item of ``Output.committed`` to the handler method of its kind."""
    if isinstance(item, CommittedBatch):
        handler.handle_commit(item)
    elif isinstance(item, SnapshotReader):
        handler.handle_load_snapshot(item)
    else:
        handler.handle_leader_change(item)
