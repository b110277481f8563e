"""Followers a new leader must not keep waiting: the leader's side of a leadership move (sans-IO).

A follower fetches all the partitions it follows from one leader in one Fetch,
which the leader parks for up to ``replica.fetch.wait.max.ms`` (500) when none
of them has new data. When leadership moves, a follower's parked Fetch names
the partitions it followed before the move, so neither an append to a
partition it now follows here, nor anything else, wakes it: the follower
starts fetching the moved partitions only after the wait, and acks=all
produces to the new leader wait for it. Kafka shares that delay; most of a
leadership move's cost in tierlog was this.

Rules (``LeaderMoves``):

- When this broker becomes leader of a partition (a new leader epoch), every
  other replica of it is *expected* here for that partition, for at most
  ``window_ms`` (replica.fetch.wait.max.ms).
- A Fetch from a replica that omits a partition it is expected for is answered
  at once instead of parked (the follower has not applied the move yet, or its
  request was built before it did; it fetches again at once).
- A Fetch from the replica naming the partition clears that expectation; so
  does the window's end (a follower that never comes is not waited for here;
  the ISR rules deal with it).
- The shell also wakes the expected replicas' parked Fetches when the
  expectation starts, and parked Fetches naming a partition this broker stops
  leading (they are answered with the error that sends the follower to the new
  leader).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["LeaderMoves"]


K = TypeVar("K", bound=Hashable)   # what names a partition (the broker's: (topic, index))


class LeaderMoves(Generic[K]):
    def __init__(self, window_ms: int):
        self.window_ms = window_ms
        self._expected: dict[int, dict[K, int]] = {}   # replica -> partition -> until (ms)

    def became_leader(self, key: K, replicas: Iterable[int], leader_id: int, now_ms: int) -> list[int]:
        """The replicas now expected to fetch ``key`` here (the shell wakes their parked fetches)."""
        others = [r for r in replicas if r != leader_id]
        for r in others:
            self._expected.setdefault(r, {})[key] = now_ms + self.window_ms
        return others

    def fetched(self, replica_id: int, key: K) -> None:
        expected = self._expected.get(replica_id)
        if expected is not None and expected.pop(key, None) is not None and not expected:
            del self._expected[replica_id]

    def must_answer_now(self, replica_id: int, holds: Callable[[K], bool], now_ms: int) -> bool:
        """Whether a Fetch from ``replica_id`` lacks a partition it is expected for (``holds(key)``:
        the fetch, or its fetch session, has ``key``)."""
        expected = self._expected.get(replica_id)
        if not expected:
            return False
        for key in [k for k, until in expected.items() if until <= now_ms]:
            del expected[key]
        if not expected:
            del self._expected[replica_id]
            return False
        return not all(holds(key) for key in expected)
