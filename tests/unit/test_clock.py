"""The process clocks: wall time in epoch milliseconds, a monotonic clock in milliseconds."""

import time

from tierlog import clock


def test_wall_clock_ms_is_epoch_milliseconds():
    before = time.time_ns() // 1_000_000
    now = clock.wall_clock_ms()
    after = time.time_ns() // 1_000_000
    assert isinstance(now, int) and before <= now <= after


def test_monotonic_ms_never_goes_backwards():
    readings = [clock.monotonic_ms() for _ in range(1000)]
    assert all(isinstance(r, int) for r in readings)
    assert readings == sorted(readings)
