"""The process's clocks, for the asyncio shells (sans-IO cores take ``now_ms``).

``wall_clock_ms`` is epoch milliseconds: what Kafka stores (record and batch
timestamps, heartbeat and session times, quorum fetch times) and what goes to
disk or over the wire. ``monotonic_ms`` never goes backwards and is for
measuring elapsed time and deadlines inside one process only.
"""

from __future__ import annotations

import time

__all__ = ["monotonic_ms", "wall_clock_ms"]


def wall_clock_ms() -> int:
    """Milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def monotonic_ms() -> int:
    """Milliseconds of a clock that never goes backwards (its origin is arbitrary)."""
    return time.monotonic_ns() // 1_000_000
