"""The leader's fetch purgatory: Fetch requests parked until there is data or they expire.

Rules (KIP-595 long-polling Fetch):

- A valid Fetch that finds no new data and asks to wait (``max_wait_ms > 0``) is
  parked under a token for min(its ``max_wait_ms``, ``fetch_max_wait_ms``).
- A parked Fetch is answered when it expires, when the leader's log or high
  watermark moves (``take_all``), or on any state transition (then with an error,
  as the node is no longer the leader of that epoch).
- The answer is computed when taken, never when parked.

Sans-IO: the purgatory only holds requests and deadlines; the node answers them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tierlog.raft.messages import FetchRequest

__all__ = ["FetchPurgatory", "ParkedFetch"]


@dataclass(frozen=True)
class ParkedFetch:
    token: int
    sender_id: int
    request: FetchRequest
    deadline_ms: int


class FetchPurgatory:
    def __init__(self, fetch_max_wait_ms: int):
        self._max_wait_ms = fetch_max_wait_ms
        self._parked: dict[int, ParkedFetch] = {}
        self._next_token = 1

    def __len__(self) -> int:
        return len(self._parked)

    def park(self, sender_id: int, request: FetchRequest, now_ms: int) -> int:
        token = self._next_token
        self._next_token += 1
        wait = min(request.max_wait_ms, self._max_wait_ms)
        self._parked[token] = ParkedFetch(token, sender_id, request, now_ms + wait)
        return token

    def take_expired(self, now_ms: int) -> list[ParkedFetch]:
        """Remove and return the fetches whose wait is over, oldest first."""
        return self._take([t for t, p in self._parked.items() if p.deadline_ms <= now_ms])

    def take_all(self) -> list[ParkedFetch]:
        return self._take(list(self._parked))

    def deadlines(self) -> Iterator[int]:
        return (p.deadline_ms for p in self._parked.values())

    def _take(self, tokens: list[int]) -> list[ParkedFetch]:
        return [self._parked.pop(t) for t in tokens]
