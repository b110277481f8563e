"""node.log rotates by size, and stderr follows the current file (cli/node_log.py).

Run in a child process: the handler points the process's fd 2 at the log file.
"""
from __future__ import annotations

import subprocess
import sys

_CHILD = """
import logging, sys, warnings
from tierlog.cli.node_log import log_to_file
log_to_file({path!r}, "INFO", max_bytes=4000, backups=2)
log = logging.getLogger("t")
for i in range(200):
    log.info("record %03d %s", i, "x" * 40)
sys.stderr.write("straight to stderr\\n")
sys.stderr.flush()
"""


def test_the_log_rotates_keeping_backups_and_stderr_follows(tmp_path):
    path = tmp_path / "node.log"
    result = subprocess.run([sys.executable, "-c", _CHILD.format(path=str(path))],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["node.log", "node.log.1", "node.log.2"]
    for name in files:
        assert 0 < (tmp_path / name).stat().st_size <= 4000
    current = path.read_text()
    assert "record 199" in current and current.endswith("straight to stderr\n")
    assert "record 199" not in (tmp_path / "node.log.1").read_text()
    assert "record 000" not in "".join((tmp_path / n).read_text() for n in files), "the oldest is deleted"
