"""The README's CLI sessions run as written: the first session (topics, groups, offsets reset,
elections, a reassignment plan), the tiered storage session and the remote verify /
delete-records one.

Each block is found by a line it holds, split into commands (``\\`` continuations joined,
``#`` comments dropped) and run line by line with bash in a scratch directory against one
cluster, through ``TIERLOG_BOOTSTRAP``. The cluster has what ``./dev up`` has for those
sessions: brokers 2-5 (so ``--broker-list 4,5`` names real brokers) and tiered storage in
``tierlog-data/remote-storage`` of the scratch directory, uploading every second as the
README's ``--set`` lines ask. Lines that need what a test cluster is not are left out by
name: the venv activation (the test's interpreter is already the venv's), the 200 MB perf
run, and the snapshot listing of ``tierlog-data/node-1`` (a metadata snapshot appears only
after an hour, see the README).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cluster import Cluster, running
from tiered import fs_props

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"
SESSIONS = ("tierlog topics create demo --partitions 3",           # the first session
            "tierlog topics create events --config remote.storage.enable=true",   # tiered storage
            "tierlog delete-records --topic events --partition 0")                # skipping a lost segment
LEFT_OUT = (". .venv/bin/activate", "tierlog perf produce --topic demo --num-records 200000",
            "tierlog metadata snapshots")
README_UP_SETTINGS = {"remote.log.manager.task.interval.ms": "1000", "log.retention.check.interval.ms": "1000"}


def _blocks() -> list[str]:
    return [b.split("```", 1)[0] for b in README.read_text().split("```bash\n")[1:]]


def _commands(block: str) -> list[str]:
    joined = block.replace("\\\n", " ")
    lines = [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith(LEFT_OUT)]


def session(holding: str) -> list[str]:
    """The commands of the first block holding that line."""
    return _commands(next(b for b in _blocks() if holding in b))


@pytest.mark.timeout(600)      # about 20 commands, a 6 MB produce and its read back from remote storage
def test_the_readme_sessions_run_as_written(tmp_path):
    props = {**fs_props(tmp_path / "tierlog-data" / "remote-storage"), **README_UP_SETTINGS}
    with running(Cluster(tmp_path / "cluster", controllers=1, brokers=4, props=props)) as cluster:
        cluster.wait_leader()
        env = {**os.environ, "TIERLOG_BOOTSTRAP": cluster.brokers[0].bootstrap,
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        lines = [line for holding in SESSIONS for line in session(holding)]
        assert any("--shift-by -2 --execute" in line for line in lines)
        assert any(line.startswith("echo ") and "topics.json" in line for line in lines)
        assert any(line.startswith("tierlog topics create events") and "local.retention.bytes" in line
                   for line in lines)
        for line in lines:
            result = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                                    timeout=180, check=False)
            assert result.returncode == 0, f"{line}\n{result.stderr}"
            if line.startswith("tierlog reassign --generate"):
                assert "Proposed partition reassignment configuration" in result.stdout
            if line.startswith("tierlog delete-records"):
                assert result.stdout.strip() == "events-0: low watermark 5248"
