"""A byte-rate limit (``remote.log.manager.copy.max.bytes.per.second``) as a token bucket (sans-IO).

The bucket holds at most one second of bytes; ``delay_s(n, now)`` takes ``n``
bytes and says how long the caller must wait first (0 when within the rate).
A rate of LONG_MAX (Kafka's default) never waits.
"""

from __future__ import annotations

__all__ = ["ByteRateLimit"]

UNLIMITED = 2**63 - 1


class ByteRateLimit:
    def __init__(self, bytes_per_s: int, now_s: float) -> None:
        self.rate = bytes_per_s
        self._tokens = float(min(bytes_per_s, UNLIMITED))
        self._at = now_s

    def delay_s(self, n: int, now_s: float) -> float:
        if self.rate >= UNLIMITED:
            return 0.0
        self._tokens = min(float(self.rate), self._tokens + (now_s - self._at) * self.rate)
        self._at = now_s
        self._tokens -= n
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate
