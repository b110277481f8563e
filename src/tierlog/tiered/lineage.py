"""Whether a remote segment belongs to a log's leader-epoch lineage (sans-IO).

Kafka's ``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs``. Epoch maps are
(epoch, start offset) lists, increasing; an epoch with no records (the next entry
starts at the same offset) is left out of both maps first. A segment is within
the log's lineage when:

- its last epoch lies within [the log's first epoch, the log's last epoch];
- from its first epoch at or after the log's first epoch on, each of its epochs
  is one of the log's; the first of them starts no earlier than the log's entry
  for it (unless that is the log's first entry: the log start moved into it);
- each of its epochs but the last is followed by the same (epoch, start offset)
  entry as in the log, and its end offset lies before the start of the log's
  epoch after its last one;
- its end offset is below the log end offset.

A segment that fails is an upload of another history: a zombie upload of an old
leader whose log diverged (an unclean election, a truncated suffix). It holds
records that are not this log's, so it is never read, never counts as uploaded,
and expiration deletes it. A log with no epoch entries judges nothing (every
segment counts as within it).
"""

from __future__ import annotations

from collections.abc import Sequence

from tierlog.tiered.segment_metadata import RemoteLogSegmentMetadata

__all__ = ["highest_offset_in_lineage", "within_leader_epochs", "without_empty_epochs"]


def without_empty_epochs(entries: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Kafka's buildFilteredLeaderEpochMap: drop an entry the next one starts at the same offset as."""
    kept = []
    for index, entry in enumerate(entries):
        if index + 1 < len(entries) and entries[index + 1][1] == entry[1]:
            continue
        kept.append(entry)
    return kept


def within_leader_epochs(segment: RemoteLogSegmentMetadata, epoch_entries: Sequence[tuple[int, int]],
                         log_end_offset: int) -> bool:
    """True when ``segment`` belongs to the lineage ``epoch_entries`` of a log ending at ``log_end_offset``."""
    log = without_empty_epochs(epoch_entries)
    if not log:
        return True
    seg = without_empty_epochs(segment.segment_leader_epochs)
    starts = dict(log)
    log_epochs = [e for e, _ in log]
    last = seg[-1][0]
    if last < log_epochs[0] or last > log_epochs[-1]:
        return False
    first_index = next(i for i, (e, _) in enumerate(seg) if e >= log_epochs[0])
    for index in range(first_index, len(seg)):
        epoch, start = seg[index]
        if epoch not in starts:
            return False
        position = log_epochs.index(epoch)
        if index == first_index and position > 0 and start < starts[epoch]:
            return False
        following = log[position + 1] if position + 1 < len(log) else None
        if epoch == last:
            if following is not None and segment.end_offset > following[1] - 1:
                return False
        elif following != seg[index + 1]:
            return False
    return segment.end_offset < log_end_offset


def highest_offset_in_lineage(finished: Sequence[RemoteLogSegmentMetadata], epoch_entries: Sequence[tuple[int, int]],
                              log_end_offset: int) -> int:
    """The highest end offset of a finished segment within the lineage; -1 when there is none."""
    return max((m.end_offset for m in finished if within_leader_epochs(m, epoch_entries, log_end_offset)),
               default=-1)
