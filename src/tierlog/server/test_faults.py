"""Test-only fault injection into a running node, for the nemesis soak (bench/soak.py).

A node started with ``tierlog.test.faults.file=PATH`` re-reads that JSON file on SIGUSR2 and
applies it: ``clock_offset_ms`` steps the node's wall clock (``tierlog.clock``; the monotonic
clock never moves, as with an NTP step) and ``disk_delay_ms`` makes every log append and
every fsync of its storage layer that much slower (``tierlog.storage.files``).  Both are 0
when absent.  Without the config (the default) nothing is installed: SIGUSR2 keeps its
default action, and no setting can reach these knobs.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from tierlog.clock import set_test_wall_offset_ms
from tierlog.storage.files import set_test_disk_delay_ms

__all__ = ["TEST_FAULTS_FILE", "apply_test_faults"]

TEST_FAULTS_FILE = "tierlog.test.faults.file"
MAX_FILE_BYTES = 4096

_log = logging.getLogger(__name__)


def apply_test_faults(path: Path) -> dict[str, int] | None:
    """Read ``path`` and apply it (see the module docstring); None (and a log line) if unreadable."""
    try:
        with open(path, "rb") as f:
            raw = json.loads(f.read(MAX_FILE_BYTES) or b"{}")
        faults = {key: int(raw.get(key, 0)) for key in ("clock_offset_ms", "disk_delay_ms")}
    except (OSError, ValueError, TypeError, AttributeError) as e:
        _log.warning("test faults: cannot read %s: %s", path, e)
        return None
    set_test_wall_offset_ms(faults["clock_offset_ms"])
    set_test_disk_delay_ms(faults["disk_delay_ms"])
    _log.warning("test faults applied: wall clock offset %d ms, disk delay %d ms",
                 faults["clock_offset_ms"], faults["disk_delay_ms"])
    return faults
