"""KIP-1303 local-log coverage reports: when a member's values are worth an AlterPartition.

The KIP-1303 draft ("Tracking Local Log State") has followers report
LocalLogStartTimestamp and LocalLogSizeBytes in every Fetch and the leader
send AlterPartition "when any ISR member's values change".  Sending on every
change would mean an AlterPartition per produced batch (the size grows with
every append), so the leader sends only on a *material* change against the
values it last got committed by the controller:

- a value goes from unknown (-1) to known or back;
- LocalLogStartTimestamp changes at all (it moves only when retention deletes
  local segments: rare, and it shortens the replica's time coverage);
- LocalLogSizeBytes crosses ``leader.election.eligible.local.log.bytes`` (when
  that threshold is on), in either direction;
- LocalLogSizeBytes differs by more than ``LOCAL_LOG_SIZE_CHANGE_FRACTION`` of
  the committed value.

The time threshold needs no report: the controller computes now - timestamp.
Report-only AlterPartitions are also rate limited per partition
(``LOCAL_LOG_REPORT_INTERVAL_MS``); ISR changes are never delayed and always
carry fresh values.  The KIP accepts this staleness ("delay eligibility by
one reporting cycle").
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "LOCAL_LOG_REPORT_INTERVAL_MS",
    "LOCAL_LOG_SIZE_CHANGE_FRACTION",
    "UNKNOWN_LOCAL_LOG",
    "LocalLog",
    "changed_materially",
]

LOCAL_LOG_SIZE_CHANGE_FRACTION = 0.10
LOCAL_LOG_REPORT_INTERVAL_MS = 30_000


@dataclass(frozen=True, slots=True)
class LocalLog:
    start_timestamp: int = -1      # LocalLogStartTimestamp, -1 unknown
    size_bytes: int = -1           # LocalLogSizeBytes, -1 unknown


UNKNOWN_LOCAL_LOG = LocalLog()


def changed_materially(committed: LocalLog, current: LocalLog, eligible_bytes: int = -1,
                       fraction: float = LOCAL_LOG_SIZE_CHANGE_FRACTION) -> bool:
    if committed == current:
        return False
    if committed.start_timestamp != current.start_timestamp:
        return True
    old, new = committed.size_bytes, current.size_bytes
    if (old < 0) != (new < 0):
        return True
    if old < 0:
        return False
    if eligible_bytes > 0 and (old >= eligible_bytes) != (new >= eligible_bytes):
        return True
    return abs(new - old) > fraction * max(old, 1)
