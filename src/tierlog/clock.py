"""The process's clocks, for the asyncio shells (sans-IO cores take ``now_ms``).

``wall_clock_ms`` is epoch milliseconds: what Kafka stores (record and batch
timestamps, heartbeat and session times, quorum fetch times) and what goes to
disk or over the wire. ``monotonic_ms`` never goes backwards and is for
measuring elapsed time and deadlines inside one process only; ``monotonic_s``
is the same clock in float seconds (blocking clients' deadlines, rate limits) and
``monotonic_ns`` in nanoseconds (request latency metrics).

A test-only wall clock offset (``set_test_wall_offset_ms``) steps this process's wall clock as
an NTP step would (the monotonic clock is never moved); only a node started with
``tierlog.test.faults.file`` can be told to set it (server/test_faults.py), for the nemesis soak.

This is the one module that reads the clocks: a unit test (tests/unit/test_clock.py)
fails when another module of src/ calls ``time.time``, ``time.monotonic`` or
``time.perf_counter`` itself.
"""

from __future__ import annotations

import time

__all__ = ["monotonic_ms", "monotonic_ns", "monotonic_s", "set_test_wall_offset_ms", "wall_clock_ms"]

_wall_offset_ms = 0         # test only: 0 unless the nemesis stepped this node's clock


def wall_clock_ms() -> int:
    """Milliseconds since the Unix epoch (plus the test-only offset, normally 0)."""
    return time.time_ns() // 1_000_000 + _wall_offset_ms


def set_test_wall_offset_ms(offset_ms: int) -> None:
    """Test only: from now on the wall clock reads ``offset_ms`` away from the system's."""
    global _wall_offset_ms
    _wall_offset_ms = int(offset_ms)


def monotonic_ms() -> int:
    """Milliseconds of a clock that never goes backwards (its origin is arbitrary)."""
    return time.monotonic_ns() // 1_000_000


def monotonic_s() -> float:
    """Seconds of the monotonic clock, as a float (for deadlines in seconds)."""
    return time.monotonic()


def monotonic_ns() -> int:
    """Nanoseconds of the monotonic clock."""
    return time.monotonic_ns()
