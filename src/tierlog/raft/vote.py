"""Vote rules (KIP-595), plus KIP-630's 'Changes to Leader Election'.

A voter grants its vote in epoch E to candidate C when it has not voted in E for
anyone else, knows no leader of E, and C's log is at least as up to date as its own:
(last epoch, end offset) compared lexicographically. A replica whose snapshot is
incomplete (downloading one) advertises its log as empty, (-1, -1), when it stands; as a
voter it compares with its log or the snapshot it downloads, whichever is further.
"""

from __future__ import annotations

import random

from tierlog.raft.state import Prospective, State, Unattached
from tierlog.raft.types import OffsetAndEpoch

__all__ = ["EMPTY_LOG", "candidate_log_ok", "may_grant"]

EMPTY_LOG = OffsetAndEpoch(-1, -1)


def candidate_log_ok(candidate_last: OffsetAndEpoch, own_last: OffsetAndEpoch) -> bool:
    return candidate_last.key() >= own_last.key()


def may_grant(state: State, candidate_id: int, candidate_last: OffsetAndEpoch, own_last: OffsetAndEpoch) -> bool:
    """Decide a vote in the state's own epoch (epoch changes are the caller's job)."""
    if not isinstance(state, (Unattached, Prospective)):
        return False  # candidates voted for themselves; followers and leaders know a leader
    if state.voted_id is not None:
        return state.voted_id == candidate_id
    return candidate_log_ok(candidate_last, own_last)


def election_backoff_ms(rng: random.Random, retries: int, backoff_max_ms: int, base_ms: int = 100) -> int:
    """Randomized binary exponential backoff after a failed election, capped."""
    assert retries >= 1
    return min(base_ms * rng.randrange(2 << min(retries - 1, 20)), backoff_max_ms)


def end_epoch_backoff_ms(node_id: int, preferred: tuple[int, ...], backoff_max_ms: int, base_ms: int = 100) -> int:
    """How long a follower waits before standing after EndQuorumEpoch: the first
    preferred successor at once, later ones exponentially later, others the maximum."""
    if node_id not in preferred:
        return backoff_max_ms
    pos = preferred.index(node_id)
    return 0 if pos == 0 else min(base_ms << (pos - 1), backoff_max_ms)
