"""Where an empty follower of a tiered topic starts fetching (KIP-1023, sans IO).

KIP-1023 ("Follower fetch from tiered offset"): with the broker config
``follower.fetch.last.tiered.offset.enable`` on, an empty follower of a tiered,
non-compacted topic does not copy what the leader has already uploaded; it
starts at the leader's earliest pending upload offset (ListOffsets -6) and
takes the leader-epoch cache and producer state of the offsets below it from
remote storage.

``should_probe`` says whether the follower asks the leader first:
the config is on, the topic is tiered and not compacted, and the replica's log
end offset is 0 (REFERENCE.md: "'Empty' means log end offset == 0"; a replica
truncated to a non-zero offset does not qualify).

Kafka 4.3 asks only after an OFFSET_OUT_OF_RANGE or OFFSET_MOVED_TO_TIERED_STORAGE
answer, so when the leader's log start == local log start (segments uploaded
but not yet deleted locally) its follower fetches from 0 without an error and
copies everything (their test for it is disabled, "KIP extension required").
tierlog closes the gap by asking BEFORE the first fetch of such a replica (the
fetcher core's probe, ``fetcher.py``), and after those errors, as Kafka does.

``decide`` turns the leader's answers (ListOffsets as a replica: -1 its log
end, -2 its log start, -4 its local log start, -6 its earliest pending upload)
into one of:

- ``USUAL``: fetch from the replica's log end as usual (the path does not
  apply: config off, topic not tiered or compacted, replica not empty, or the
  leader's log end is 0; or T = 0, nothing to skip);
- ``START_AT`` T (no remote rebuild): T is the leader's log start > 0 and
  nothing below it needs to come from remote storage; the log restarts empty at
  T (KIP-1023 "If confirmed, we use the Local-Log-Start-Offset": nothing
  uploaded and log start == local log start);
- ``REBUILD_AT`` T with log start S (T > S): the epochs and producer state for
  [S, T) come from the remote segment holding T - 1; then log start = S and
  local log start = log end = T (KIP-1023 "Follower updates its offsets");
- ``RETRY``: -6 answered -1 while the leader's log start != local log start
  (KIP-1023 "Segments are uploaded to the remote storage but the leader does
  not know yet"): ask again after a backoff.

T = max(earliest pending upload, leader's log start, leader's local log start):
KIP-1023 "Earliest-Pending-Upload-Offset < Log-Start-Offset ... simply means
that there are no valid log segments on the remote yet" -> start from what the
leader has; and never below the leader's local log start (only its
alter-log-dirs path clamps there in Kafka; the follower must too, or its first
fetch would be answered OFFSET_MOVED_TO_TIERED_STORAGE). T is never above the
leader's log end (RETRY if the answers disagree so).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["NOT_TIERED", "LeaderOffsets", "StartKind", "TieredStart", "TopicTiering", "decide", "should_probe"]

UNKNOWN = -1


@dataclass(frozen=True, slots=True)
class TopicTiering:
    """What the rule needs to know of the topic and of this broker's config."""

    enabled: bool = False           # follower.fetch.last.tiered.offset.enable (cluster-wide, dynamic)
    tiered: bool = False            # remote storage on for this broker and remote.storage.enable for the topic
    compacted: bool = False         # cleanup.policy contains compact


@dataclass(frozen=True, slots=True)
class LeaderOffsets:
    """The leader's answers to ListOffsets asked as a replica (-1 where it answered -1)."""

    log_end: int                    # target -1 (a replica's LATEST: the log end offset)
    log_start: int                  # target -2
    local_log_start: int            # target -4
    earliest_pending_upload: int    # target -6


class StartKind(Enum):
    USUAL = "usual"
    START_AT = "start at"
    REBUILD_AT = "rebuild at"
    RETRY = "retry"


@dataclass(frozen=True, slots=True)
class TieredStart:
    kind: StartKind
    offset: int = UNKNOWN           # T: the new log end = fetch offset (START_AT, REBUILD_AT)
    log_start: int = UNKNOWN        # the new log start offset (REBUILD_AT; START_AT: = offset)


NOT_TIERED = TopicTiering()
USUAL = TieredStart(StartKind.USUAL)
RETRY = TieredStart(StartKind.RETRY)


def should_probe(topic: TopicTiering, replica_log_end: int) -> bool:
    """KIP-1023 "Check if the follower replica is empty and if the feature ... is enabled"."""
    return topic.enabled and topic.tiered and not topic.compacted and replica_log_end == 0


def decide(topic: TopicTiering, replica_log_end: int, leader: LeaderOffsets) -> TieredStart:
    """Where the replica starts, from the leader's offsets (see the module docstring)."""
    if not should_probe(topic, replica_log_end) or leader.log_end <= 0:
        return USUAL
    if leader.log_start < 0 or leader.local_log_start < 0:
        return RETRY
    pending = leader.earliest_pending_upload
    if pending < 0:
        # KIP-1023 "It can be confirmed by checking if the leader's Log-Start-Offset is the same as
        # the Leader's Local-Log-Start-Offset": then nothing is uploaded, start at the log start.
        if leader.log_start != leader.local_log_start:
            return RETRY
        pending = leader.local_log_start
    start = max(pending, leader.log_start, leader.local_log_start)
    if start > leader.log_end:
        return RETRY
    if start == 0:
        return USUAL
    if start == leader.log_start:
        return TieredStart(StartKind.START_AT, start, start)
    return TieredStart(StartKind.REBUILD_AT, start, leader.log_start)
