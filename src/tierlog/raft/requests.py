"""Outgoing quorum requests: at most one in flight per peer, and backoff after failures.

Rules (Kafka's RequestManager):

- A peer has at most one request in flight; a new one waits until it is answered,
  fails or times out (``request_timeout_ms``).
- A failure (error answer, send failure, timeout) backs the peer off for
  ``retry_backoff_ms``; a good answer makes it ready at once.
- An observer without a leader discovers one by fetching from one randomly chosen
  voter at a time (``send_to_any``); the chosen voter is the ``discovery_target``.
- A state transition forgets everything (``reset``): requests of an older state
  are answered but no longer matched.

Sans-IO: every call takes ``now_ms``; ``wake`` collects the earliest time the node
must be ticked again for something tracked here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

__all__ = ["RequestManager"]


class RequestManager:
    def __init__(self, request_timeout_ms: int, retry_backoff_ms: int, wake: Callable[[int], None]):
        self._timeout_ms = request_timeout_ms
        self._backoff_ms = retry_backoff_ms
        self._wake = wake
        self._inflight: dict[int, tuple[object, int]] = {}  # peer -> (request, timeout deadline)
        self._retry_at: dict[int, int] = {}
        self._discovery_target: int | None = None

    @property
    def discovery_target(self) -> int | None:
        """The voter an observer without a leader last fetched from."""
        return self._discovery_target

    def is_inflight(self, dest: int) -> bool:
        return dest in self._inflight

    def can_send(self, dest: int, now_ms: int) -> bool:
        """No request in flight to ``dest`` and not backing off (wakes at the backoff's end)."""
        if dest in self._inflight:
            return False
        at = self._retry_at.get(dest, 0)
        if at > now_ms:
            self._wake(at)
            return False
        return True

    def sent(self, dest: int, request: object, now_ms: int) -> None:
        deadline = now_ms + self._timeout_ms
        self._inflight[dest] = (request, deadline)
        self._wake(deadline)

    def send_to_any(self, candidates: Iterable[int], rng: random.Random, now_ms: int) -> int | None:
        """Observer leader discovery: the voter to fetch from now, or None while the last
        one chosen is still in flight or the random pick is backing off."""
        if self._discovery_target is not None and self._discovery_target in self._inflight:
            return None
        target = rng.choice(sorted(candidates))
        if not self.can_send(target, now_ms):
            return None
        self._discovery_target = target
        return target

    def answered(self, dest: int, request: object) -> bool:
        """An answer arrived; True when it answers the request in flight (now done)."""
        current = self._inflight.get(dest)
        if current is None or current[0] is not request:
            return False
        del self._inflight[dest]
        return True

    def backoff(self, dest: int, now_ms: int) -> None:
        self._retry_at[dest] = now_ms + self._backoff_ms

    def ready(self, dest: int, now_ms: int) -> None:
        self._retry_at[dest] = now_ms

    def failed(self, dest: int, request: object, now_ms: int) -> None:
        """The send failed; backs the peer off when it was the request in flight."""
        if self.answered(dest, request):
            self.backoff(dest, now_ms)

    def expire(self, now_ms: int) -> None:
        """Time out requests past their deadline (and back those peers off)."""
        for dest, (_request, deadline) in list(self._inflight.items()):
            if deadline <= now_ms:
                del self._inflight[dest]
                self.backoff(dest, now_ms)
            else:
                self._wake(deadline)

    def reset(self) -> None:
        self._inflight.clear()
        self._retry_at.clear()
