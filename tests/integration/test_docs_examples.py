"""The documentation's runnable shell sessions run as written.

A runnable block is a fenced ``bash`` block right after a line ``<!-- runnable -->``
(docs/testing.md, "The docs are tested"), in README.md and then docs/*.md in name order.
Each block is split into commands (``\\`` continuations joined, ``#`` comments dropped) and
run line by line with bash in one scratch directory against one cluster, through
``TIERLOG_BOOTSTRAP``, so a block may build on the ones before it. The cluster has what
``./dev up`` has for those sessions: brokers 2-5 (so ``--broker-list 4,5`` names real
brokers) and tiered storage in ``tierlog-data/remote-storage`` of the scratch directory,
uploading every second as the README's ``--set`` lines ask.
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

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- runnable -->"
README_UP_SETTINGS = {"remote.log.manager.task.interval.ms": "1000", "log.retention.check.interval.ms": "1000"}
# not the sessions' business: the README's `consume --group billing` waited Kafka's 3 s before its
# group's first assignment
FAST_GROUPS = {"group.initial.rebalance.delay.ms": "100"}


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def runnable_blocks(text: str) -> list[str]:
    """The bodies of the ``bash`` blocks marked runnable, in order."""
    blocks = []
    for part in text.split(MARKER + "\n")[1:]:
        assert part.startswith("```bash\n"), f"{MARKER} must be followed by a ```bash block, not {part[:40]!r}"
        blocks.append(part[len("```bash\n"):].split("```", 1)[0])
    return blocks


def commands(block: str) -> list[str]:
    joined = block.replace("\\\n", " ")
    lines = [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def runnable_commands() -> list[tuple[str, str]]:
    """(document name, command) of every runnable block, in running order."""
    return [(doc.relative_to(ROOT).as_posix(), line) for doc in documents()
            for block in runnable_blocks(doc.read_text()) for line in commands(block)]


def test_the_marked_blocks_are_the_sessions_this_test_checks():
    # no cluster: fails fast when a session loses its marker or its checked lines
    lines = [line for _, line in runnable_commands()]
    assert any("--shift-by -2 --execute" in line for line in lines)
    assert any(line.startswith("echo ") and "topics.json" in line for line in lines)
    assert any(line.startswith("tierlog topics create events") and "local.retention.bytes" in line for line in lines)
    assert any(line.startswith("tierlog delete-records") for line in lines)
    assert {doc for doc, _ in runnable_commands()} >= {"README.md", "docs/cli.md", "docs/tiered-storage.md"}


@pytest.mark.timeout(600)      # about 25 commands, a 6 MB produce and its read back from remote storage
def test_the_runnable_blocks_run_as_written(tmp_path):
    props = {**fs_props(tmp_path / "tierlog-data" / "remote-storage"), **README_UP_SETTINGS, **FAST_GROUPS}
    with running(Cluster(tmp_path / "cluster", controllers=1, brokers=4, props=props)) as cluster:
        cluster.wait_leader()
        env = {**os.environ, "TIERLOG_BOOTSTRAP": cluster.brokers[0].bootstrap,
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        for doc, line in runnable_commands():
            result = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                                    timeout=180, check=False)
            assert result.returncode == 0, f"{doc}: {line}\n{result.stderr}"
            if line.startswith("tierlog reassign --generate"):
                assert "Proposed partition reassignment configuration" in result.stdout
            if line.startswith("tierlog delete-records"):
                assert result.stdout.strip() == "events-0: low watermark 5248"
