"""The README's first CLI session runs as written (group offsets reset, a reassignment plan).

The lines come from the README's first code block with ``tierlog topics create demo``,
run one by one with bash in a scratch directory against a cluster whose brokers are
nodes 2-5 (so ``--broker-list 4,5`` names real brokers), through ``TIERLOG_BOOTSTRAP``.
Lines that need what a test cluster is not are left out by name: the venv activation (the
test's interpreter is already the venv's), the 200 MB perf run, and the snapshot listing of
``tierlog-data/`` (a `tierlog up` data dir).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.cluster(controllers=1, brokers=4)]

README = Path(__file__).resolve().parents[2] / "README.md"
FIRST_LINE = "tierlog topics create demo --partitions 3"
LEFT_OUT = (". .venv/bin/activate", "tierlog perf produce", "tierlog metadata snapshots")


def _session() -> list[str]:
    blocks = README.read_text().split("```bash\n")[1:]
    block = next(b.split("```", 1)[0] for b in blocks if FIRST_LINE in b.split("```", 1)[0])
    lines = [line.split("   #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith(LEFT_OUT)]


def test_the_readme_session_runs_as_written(cluster, tmp_path):
    cluster.wait_leader()
    env = {**os.environ, "TIERLOG_BOOTSTRAP": cluster.brokers[0].bootstrap,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    lines = _session()
    assert any("--shift-by -2 --execute" in line for line in lines)
    assert any(line.startswith("echo ") and "topics.json" in line for line in lines)
    for line in lines:
        result = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=120, check=False)
        assert result.returncode == 0, f"{line}\n{result.stderr}"
        if line.startswith("tierlog reassign --generate"):
            assert "Proposed partition reassignment configuration" in result.stdout
