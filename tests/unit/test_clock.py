"""The process clocks: wall time in epoch milliseconds, a monotonic clock in milliseconds, seconds and
nanoseconds; and no other module of src/ reads a clock itself."""

import ast
import re
import time
from pathlib import Path

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


_CLOCK_READS = {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"}
_MAY_READ = re.compile(r"\btime\.(time|monotonic|perf_counter)|\bfrom time import")
_SRC = Path(__file__).resolve().parents[2] / "src" / "tierlog"


def _clock_reads(path: Path) -> list[str]:
    """``time.<clock>`` uses and ``from time import <clock>`` in one module, as "file:line name"."""
    text = path.read_text()
    if not _MAY_READ.search(text):           # parse only the modules that may (the scan stays cheap)
        return []
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if (isinstance(node, ast.Attribute) and node.attr in _CLOCK_READS
                and isinstance(node.value, ast.Name) and node.value.id == "time"):
            found.append(f"{path.relative_to(_SRC)}:{node.lineno} time.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [f"{path.relative_to(_SRC)}:{node.lineno} from time import {a.name}"
                      for a in node.names if a.name in _CLOCK_READS]
    return found


def test_only_the_clock_module_reads_the_clocks():
    reads = [r for path in sorted(_SRC.rglob("*.py")) if path.name != "clock.py" or path.parent != _SRC
             for r in _clock_reads(path)]
    assert reads == [], "read the clock through tierlog.clock: " + ", ".join(reads)


def test_seconds_and_nanoseconds_are_the_same_monotonic_clock():
    ms, s, ns = clock.monotonic_ms(), clock.monotonic_s(), clock.monotonic_ns()
    assert isinstance(s, float) and isinstance(ns, int)
    assert ms <= s * 1000 + 1 and s * 1e9 <= ns + 1e6


def test_a_test_wall_offset_steps_the_wall_clock_not_the_monotonic_one():
    try:
        clock.set_test_wall_offset_ms(60_000)
        before_mono = clock.monotonic_ms()
        now = clock.wall_clock_ms()
        assert now - time.time_ns() // 1_000_000 >= 59_000
        assert clock.monotonic_ms() - before_mono < 59_000
    finally:
        clock.set_test_wall_offset_ms(0)
    assert abs(clock.wall_clock_ms() - time.time_ns() // 1_000_000) < 1000
