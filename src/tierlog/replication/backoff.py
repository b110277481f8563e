"""Exponential backoff with a cap, shared by the fetcher and AlterPartition retries.

``delay_ms(attempt)`` is ``initial_ms * multiplier ** (attempt - 1)`` capped at
``max_ms``; attempt 1 is the first retry.  An optional seeded ``random.Random``
adds up to ``jitter`` (a fraction) of the delay, never more than the cap.  No
clock, no module ``random``: the caller injects both (DESIGN principle 2).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["ExponentialBackoff"]


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    initial_ms: int
    max_ms: int
    multiplier: float = 2.0
    jitter: float = 0.0

    def __post_init__(self) -> None:
        assert 0 <= self.initial_ms <= self.max_ms, (self.initial_ms, self.max_ms)
        assert self.multiplier >= 1.0 and 0.0 <= self.jitter <= 1.0

    def delay_ms(self, attempt: int, rng: random.Random | None = None) -> int:
        """Delay before retry number ``attempt`` (>= 1)."""
        assert attempt >= 1, attempt
        base = self.initial_ms * self.multiplier ** min(attempt - 1, 62)
        delay = min(float(self.max_ms), base)
        if rng is not None and self.jitter:
            delay += delay * self.jitter * rng.random()
        return int(min(delay, self.max_ms))
