"""Share sessions (KIP-932; Kafka's ShareSessionCache), sans-IO: the partitions a member reads
from one broker by ShareFetch / ShareAcknowledge, kept between requests so each names only
what changed.  Not served yet (issue 37).

A session is a member's of a group, at most one per (group, member) on a broker, and carries the
ShareSessionEpoch its next request must bear:

- epoch 0 opens a session with the request's partitions, replacing the member's earlier one (its
  acquired records are then released by the caller); a request at epoch 0 may not acknowledge
  (INVALID_REQUEST: nothing acquired belongs to a new session), and a ShareAcknowledge may not
  open a session (INVALID_SHARE_SESSION_EPOCH);
- epoch N > 0 must be the session's next epoch (INVALID_SHARE_SESSION_EPOCH; no session:
  SHARE_SESSION_NOT_FOUND); the request's partitions join the session, ForgottenTopicsData
  leave it; the next epoch is N + 1, wrapping to 1 after the largest int32;
- epoch -1 closes the session after its acknowledgements; a ShareFetch at -1 fetches nothing
  (one naming partitions but acknowledging nothing is INVALID_REQUEST).

At most ``max_sessions`` sessions are open (group.share.max.share.sessions): one more is
SHARE_SESSION_LIMIT_REACHED.  ``remove_member`` drops a member's sessions when it leaves its group.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tierlog.protocol.errors import ErrorCode

__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "ShareSession", "ShareSessionCache"]

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
_MAX_EPOCH = (1 << 31) - 1
TopicPartition = tuple[bytes, int]          # (topic id, partition)


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    next_epoch: int = 1
    partitions: set[TopicPartition] = field(default_factory=set)


class ShareSessionCache:
    def __init__(self, max_sessions: int):
        assert max_sessions > 0, "at least one share session"
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def fetch(self, group_id: str, member_id: str, epoch: int, requested: Iterable[TopicPartition],
              forgotten: Iterable[TopicPartition], acknowledges: bool) -> tuple[ErrorCode, ShareSession | None]:
        """A ShareFetch's session: (NONE, the session after the request) or (error, None).  At
        FINAL_EPOCH the session is closed and returned for its acknowledgements."""
        requested = set(requested)
        if epoch == INITIAL_EPOCH:
            if acknowledges:
                return ErrorCode.INVALID_REQUEST, None
            key = (group_id, member_id)
            if key not in self._sessions and len(self._sessions) >= self.max_sessions:
                return ErrorCode.SHARE_SESSION_LIMIT_REACHED, None
            session = self._sessions[key] = ShareSession(group_id, member_id, partitions=requested)
            return ErrorCode.NONE, session
        if epoch == FINAL_EPOCH and requested and not acknowledges:
            return ErrorCode.INVALID_REQUEST, None
        error, advanced = self._advance(group_id, member_id, epoch)
        if advanced is None:
            return error, None
        advanced.partitions |= requested
        advanced.partitions -= set(forgotten)
        return ErrorCode.NONE, advanced

    def acknowledge(self, group_id: str, member_id: str, epoch: int) -> tuple[ErrorCode, ShareSession | None]:
        """A ShareAcknowledge's session (it never opens one)."""
        if epoch == INITIAL_EPOCH:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        return self._advance(group_id, member_id, epoch)

    def _advance(self, group_id: str, member_id: str, epoch: int) -> tuple[ErrorCode, ShareSession | None]:
        key = (group_id, member_id)
        session = self._sessions.get(key)
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        if epoch == FINAL_EPOCH:
            del self._sessions[key]
            return ErrorCode.NONE, session
        if epoch != session.next_epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        session.next_epoch = 1 if epoch == _MAX_EPOCH else epoch + 1
        return ErrorCode.NONE, session

    def remove_member(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)
