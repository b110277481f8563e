"""Kafka's windowed rate (``SampledStat`` / ``Rate``) and its quota throttle time, sans-IO.

A rate keeps ``samples`` samples of ``window_ms`` each (``quota.window.num`` and
``quota.window.size.seconds``): a value recorded goes into the current sample, a new
sample starts once the current one is ``window_ms`` old, and samples older than all the
windows together are forgotten. The rate is the samples' total over the time they span,
padded with whole windows up to ``samples - 1`` of them (so a first burst is not divided by
a few milliseconds). Time is given (``now_ms``), never read.

``throttle_ms`` is KIP-13's delay for a rate over its quota: the time, out of the
measured window, that brings the rate back to the quota, ``(rate - quota) / quota *
window``, at most the whole span of the samples.
"""
from __future__ import annotations

__all__ = ["SampledRate", "throttle_ms"]


class SampledRate:
    __slots__ = ("_current", "_starts", "_values", "_counts", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int, now_ms: int):
        assert samples >= 2 and window_ms > 0
        self.samples, self.window_ms = samples, window_ms
        self._starts = [now_ms] * samples
        self._values = [0.0] * samples
        self._counts = [0] * samples
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        i = self._current
        if now_ms >= self._starts[i] + self.window_ms:
            i = self._current = (i + 1) % self.samples
            self._starts[i], self._values[i], self._counts[i] = now_ms, 0.0, 0
        self._values[i] += value
        self._counts[i] += 1

    def _live(self, now_ms: int) -> list[int]:
        """The samples not yet obsolete (younger than all the windows together)."""
        horizon = now_ms - self.samples * self.window_ms
        return [i for i in range(self.samples) if self._starts[i] > horizon]

    def total(self, now_ms: int) -> tuple[float, int]:
        """(sum of values, number of values) over the live samples."""
        live = self._live(now_ms)
        return sum(self._values[i] for i in live), sum(self._counts[i] for i in live)

    def window_ms_at(self, now_ms: int) -> int:
        """The time the live samples span, padded with whole windows up to ``samples - 1`` of them
        (Kafka's Rate.windowSize: 0.5 s of samples out of 11 count as 10.5 s)."""
        live = self._live(now_ms)
        elapsed = now_ms - min((self._starts[i] for i in live), default=now_ms)
        missing = self.samples - 1 - elapsed // self.window_ms
        return elapsed + missing * self.window_ms if missing > 0 else elapsed

    def rate(self, now_ms: int) -> float:
        """Per second."""
        return self.total(now_ms)[0] * 1000 / self.window_ms_at(now_ms)

    def average(self, now_ms: int) -> float:
        value, count = self.total(now_ms)
        return value / count if count else 0.0


def throttle_ms(rate: SampledRate, quota: float, now_ms: int) -> int:
    """How long a client whose usage is ``rate`` must wait to be back at ``quota`` per second (0: not over)."""
    observed = rate.rate(now_ms)
    if observed <= quota:
        return 0
    window = rate.window_ms_at(now_ms)
    return min(round((observed - quota) / quota * window), rate.samples * rate.window_ms)
