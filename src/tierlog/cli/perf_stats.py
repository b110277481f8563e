"""Figures for the perf commands: latency percentiles and throughput.

Like kafka-producer-perf-test, average and maximum latency cover every
record, while percentiles come from a bounded sample: every k-th record,
with k chosen so that at most `SAMPLES_MAX` latencies are kept. Percentiles
use the nearest-rank method. MB means 2**20 bytes, as in Kafka's tools.
"""

from __future__ import annotations

import math
from array import array

__all__ = ["MB", "PERCENTILES", "SAMPLES_MAX", "LatencyRecorder", "rates"]

MB = 1024 * 1024
SAMPLES_MAX = 500_000
PERCENTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99, "p999": 0.999}


class LatencyRecorder:
    """Latencies in ms: count, mean and max over all, percentiles over a sample."""

    def __init__(self, expected_count: int) -> None:
        self._every = max(1, math.ceil(expected_count / SAMPLES_MAX))
        self._samples = array("d")
        self.count = 0
        self.total_ms = 0.0
        self.max_ms = 0.0

    def record(self, latency_ms: float) -> None:
        if self.count % self._every == 0:
            self._samples.append(latency_ms)
        self.count += 1
        self.total_ms += latency_ms
        self.max_ms = max(self.max_ms, latency_ms)

    def summary(self) -> dict[str, float]:
        """``latency_{avg,p50,p95,p99,p999,max}_ms``; zeros when nothing was recorded."""
        ordered = sorted(self._samples)
        figures = {"latency_avg_ms": self.total_ms / self.count if self.count else 0.0}
        for name, q in PERCENTILES.items():
            figures[f"latency_{name}_ms"] = _nearest_rank(ordered, q)
        figures["latency_max_ms"] = self.max_ms
        return {k: round(v, 3) for k, v in figures.items()}


def _nearest_rank(ordered: list[float], q: float) -> float:
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def rates(records: int, total_bytes: int, elapsed_s: float) -> dict[str, float]:
    """records/s and MB/s over `elapsed_s` (zero for an empty interval)."""
    per_s = 1.0 / elapsed_s if elapsed_s > 0 else 0.0
    return {
        "elapsed_s": round(elapsed_s, 6),
        "records_per_sec": round(records * per_s, 3),
        "mb_per_sec": round(total_bytes * per_s / MB, 6),
    }
