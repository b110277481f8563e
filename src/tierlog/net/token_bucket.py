"""KIP-599's token bucket for controller mutation quotas, sans-IO.

A bucket of ``quota * samples * window_s`` tokens (the burst ``controller.quota.window.num``
windows of ``controller.quota.window.size.seconds`` allow) refills at ``quota`` tokens per
second; each mutation takes one token per partition created or deleted, and may take the
bucket below zero. While it is below zero the quota is exceeded (strict requests are
refused with THROTTLING_QUOTA_EXCEEDED), and the throttle time is how long the refill
takes to bring it back to zero. Time is given (``now_ms``), never read.
"""
from __future__ import annotations

import math

__all__ = ["TokenBucket"]


class TokenBucket:
    __slots__ = ("_last_ms", "burst_s", "quota", "tokens")

    def __init__(self, quota: float, burst_s: float, now_ms: int):
        self.quota, self.burst_s = quota, burst_s
        self.tokens = quota * burst_s
        self._last_ms = now_ms

    def _refill(self, now_ms: int) -> None:
        elapsed = max(0, now_ms - self._last_ms)
        self._last_ms = max(self._last_ms, now_ms)
        self.tokens = min(self.quota * self.burst_s, self.tokens + self.quota * elapsed / 1000)

    def exceeded(self, now_ms: int) -> bool:
        self._refill(now_ms)
        return self.tokens < 0

    def record(self, permits: float, now_ms: int) -> None:
        self._refill(now_ms)
        self.tokens -= permits

    def throttle_ms(self, now_ms: int) -> int:
        """How long until the bucket is back at zero (0: not below)."""
        self._refill(now_ms)
        return 0 if self.tokens >= 0 else math.ceil(-self.tokens / self.quota * 1000)

    def level(self, now_ms: int) -> float:
        self._refill(now_ms)
        return self.tokens
