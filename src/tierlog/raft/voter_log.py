"""Keeps the voter history (raft/voters.py) in step with the log and the snapshots.

Rules (KIP-853):

- At start-up the history is the bootstrap set, then the set in the latest snapshot,
  then every VotersRecord in the log after it, in order.
- Every batch appended (as leader or follower) is scanned for VotersRecords; a
  truncation forgets the sets written at or after the new end (the set in effect
  reverts); a log restarted at a snapshot takes the snapshot's set.
- Whenever the set in effect changes, ``changed`` is raised for the node to act on
  (timers, the leader's progress); ``take_changed`` lowers it.
"""

from __future__ import annotations

from collections.abc import Iterable

from tierlog.raft.log import ReplicatedLog
from tierlog.raft.snapshots import SnapshotReader, SnapshotStore
from tierlog.raft.types import LogBatch, OffsetAndEpoch
from tierlog.raft.voters import KRAFT_VOTERS, VoterHistory, VoterSet, decode_voters

__all__ = ["VoterLog"]

_SCAN_BYTES = 1 << 20


class VoterLog:
    def __init__(self, bootstrap: VoterSet, log: ReplicatedLog, snapshots: SnapshotStore, dynamic: bool):
        self.history = VoterHistory(bootstrap)
        self._log = log
        self._snapshots = snapshots
        self._dynamic = dynamic   # kraft.version 0: the bootstrap set is fixed, records ignored
        self._changed = False

    def rebuild(self) -> None:
        """Start-up: the latest snapshot's set, then the log's VotersRecords."""
        if not self._dynamic:
            return
        offset = self._log.start_offset
        latest = self._snapshots.latest()
        if latest is not None and latest.offset >= offset and self._take_snapshot_set(latest):
            offset = latest.offset   # the snapshot holds the set in effect up to its end
        while offset < self._log.end_offset:
            batches = self._log.read(offset, _SCAN_BYTES)
            self.appended(batches)
            offset = batches[-1].next_offset
        self._changed = False

    def appended(self, batches: Iterable[LogBatch]) -> None:
        if not self._dynamic:
            return
        for b in batches:
            if b.control and b.control_type == KRAFT_VOTERS:
                for i, value in enumerate(b.records):
                    self.history.add(b.base_offset + i, decode_voters(value))
                    self._changed = True

    def truncated(self, end_offset: int) -> None:
        if self._dynamic and self.history.latest_offset >= end_offset:
            self.history.truncate_to(end_offset)
            self._changed = True

    def restarted(self, sid: OffsetAndEpoch) -> None:
        """The log restarts at snapshot ``sid`` (installed from the leader)."""
        if self._dynamic:
            self._take_snapshot_set(sid)
            self._changed = True

    def _take_snapshot_set(self, sid: OffsetAndEpoch) -> bool:
        data = self._snapshots.read_all(sid)
        voters = SnapshotReader(sid, data).voters if data is not None else None
        if voters is not None:
            self.history.reset(sid.offset, voters)
        return voters is not None

    def take_changed(self) -> bool:
        changed, self._changed = self._changed, False
        return changed
