"""The leader's rules for changing the voter set (KIP-853 AddRaftVoter, RemoveRaftVoter,
UpdateRaftVoter), as Kafka applies them; each answers a Kafka error code.

- Only the leader changes the set (NOT_LEADER_OR_FOLLOWER), and only with
  kraft.version 1 (UNSUPPORTED_VERSION).
- One change at a time: the leader must have committed an offset of its own epoch
  (so it knows the latest committed set) and the last VotersRecord must be committed
  before another is written; otherwise REQUEST_TIMED_OUT, the client retries.
- Add: the id must not be a voter already (DUPLICATE_VOTER) and the new replica must
  have caught up as an observer: it fetched the leader's log end within the fetch
  timeout (REQUEST_TIMED_OUT otherwise). At most ``MAX_VOTERS`` voters (INVALID_REQUEST).
- Remove and update: the (id, directory id) must be a voter (VOTER_NOT_FOUND); the
  last voter cannot be removed (VOTER_NOT_FOUND, as Kafka answers). A leader that
  removes itself keeps leading, outside the majority, until the change commits, and
  then resigns (node.py).
- Update (ours, stricter than Kafka): the record is written only while the voter has
  fetched up to the leader's log end; asked earlier, the leader answers
  REQUEST_TIMED_OUT and writes it when that voter's next Fetch reaches its log end
  (``VoterChanges.fetched``; a busy leader is seldom caught with every voter at its
  end, so waiting for the voter's own Fetch is what gets it through). Then any
  voter that misses the record holds no entry the moved voter lacks, so it grants the
  moved voter its vote; had the record been written while the moved voter lagged, a
  voter that missed it but holds more would refuse the moved one and could not reach
  it to ask for a vote (it would ask the old address): no leader could be elected.
"""

from __future__ import annotations

from tierlog.raft.leader import LeaderProgress
from tierlog.raft.types import Err, RaftConfig
from tierlog.raft.voters import MAX_VOTERS, Voter, VoterHistory, VoterSet

__all__ = ["change_allowed", "voters_after_add", "voters_after_remove"]


def change_allowed(history: VoterHistory, progress: LeaderProgress, high_watermark: int) -> int:
    """Whether the leader may write a VotersRecord now (the one-change-at-a-time rule)."""
    if high_watermark <= progress.epoch_start_offset:
        return Err.REQUEST_TIMED_OUT       # nothing of its epoch committed yet
    if history.latest_offset >= high_watermark:
        return Err.REQUEST_TIMED_OUT       # the previous change is not committed
    return Err.NONE


def voters_after_add(current: VoterSet, voter: Voter, progress: LeaderProgress, config: RaftConfig,
                     now_ms: int) -> tuple[int, VoterSet | None]:
    if current.get(voter.voter_id) is not None:
        return Err.DUPLICATE_VOTER, None
    if len(current) >= MAX_VOTERS:
        return Err.INVALID_REQUEST, None
    p = progress.progress_of(voter.voter_id)
    if p is None or p.last_caught_up_ms < now_ms - config.fetch_timeout_ms:
        return Err.REQUEST_TIMED_OUT, None   # not an observer that has caught up
    return Err.NONE, current.with_voter(voter)


def voters_after_remove(current: VoterSet, voter_id: int, directory_id: bytes) -> tuple[int, VoterSet | None]:
    v = current.get(voter_id)
    if v is None or v.directory_id != directory_id or len(current) == 1:
        return Err.VOTER_NOT_FOUND, None
    return Err.NONE, current.without(voter_id)
