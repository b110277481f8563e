"""The test-only fault file (server/test_faults.py): a wall clock step and a slow disk, and nothing
else; an unreadable file changes nothing."""
import json
import time

import pytest

from tierlog import clock
from tierlog.server.test_faults import apply_test_faults
from tierlog.storage import files


@pytest.fixture(autouse=True)
def _reset():
    yield
    clock.set_test_wall_offset_ms(0)
    files.set_test_disk_delay_ms(0)


def test_the_file_steps_the_wall_clock_and_slows_the_disk(tmp_path):
    path = tmp_path / "faults.json"
    path.write_text(json.dumps({"clock_offset_ms": -30_000, "disk_delay_ms": 40}))
    assert apply_test_faults(path) == {"clock_offset_ms": -30_000, "disk_delay_ms": 40}
    assert time.time_ns() // 1_000_000 - clock.wall_clock_ms() >= 29_000
    started = clock.monotonic_s()
    files.fsync_path(path)
    assert clock.monotonic_s() - started >= 0.04
    path.write_text("{}")           # both back to 0
    assert apply_test_faults(path) == {"clock_offset_ms": 0, "disk_delay_ms": 0}
    assert abs(clock.wall_clock_ms() - time.time_ns() // 1_000_000) < 1000


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"clock_offset_ms": "soon"}'])
def test_an_unreadable_file_changes_nothing(tmp_path, text):
    path = tmp_path / "faults.json"
    path.write_text(text)
    assert apply_test_faults(path) is None
    assert abs(clock.wall_clock_ms() - time.time_ns() // 1_000_000) < 1000


def test_a_missing_file_changes_nothing(tmp_path):
    assert apply_test_faults(tmp_path / "absent.json") is None
