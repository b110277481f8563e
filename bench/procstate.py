"""Sample a process's scheduler state from /proc while a phase runs.

A broker that serves from one event loop stalls every client when a system
call blocks; the share of samples in state D (uninterruptible, mostly disk)
and the kernel functions it waited in (``wchan``) show such stalls without a
profiler.  Linux only.
"""
from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Self

__all__ = ["StateSampler"]

INTERVAL_S = 0.02
TOP_WAITS = 5


class StateSampler:
    """``with StateSampler(pid) as s: ...``; then ``s.summary()``."""

    def __init__(self, pid: int, interval_s: float = INTERVAL_S):
        self._pid, self._interval = pid, interval_s
        self._counts: Counter = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._counts[self._sample()] += 1
            except OSError:  # the process is gone
                return

    def _sample(self) -> tuple[str, str]:
        state = Path(f"/proc/{self._pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        wchan = Path(f"/proc/{self._pid}/wchan").read_text().strip()
        return state, wchan if wchan and wchan != "0" else "-"

    def summary(self) -> dict:
        total = sum(self._counts.values())
        if not total:
            return {}
        states = Counter()
        for (state, _), n in self._counts.items():
            states[state] += n
        disk = Counter({w: n for (s, w), n in self._counts.items() if s == "D"})
        return {"samples": total, "interval_ms": 1000 * self._interval,
                "share": {s: n / total for s, n in states.items()},
                "disk_wait_share": states.get("D", 0) / total,
                "disk_waits": dict(disk.most_common(TOP_WAITS))}
