"""The suite's nemesis soak (issue 40): ``bench/soak.py --short``, seeded.

3 controllers and 4 brokers, each in a network namespace of its own, remote storage on a moto S3
server; idempotent producers (confluent-kafka and kafka-python), classic and KIP-848 groups
committing, transactional producers and read_committed readers, a consume-transform-produce
loop, a topic turned tiered, topics created, reassigned and deleted; meanwhile 90 s (up to 120 s
until every kind was applied) of overlapping faults of every kind (kill -9, SIGSTOP, isolation,
a controller minority split, a one-way cut, an S3 outage, a log dir at ENOSPC, a slow disk, a
clock step, a lost remote object), then the checker after healing. A failure prints the seed and
the schedule: ``bench/soak.py --short --seed <seed>`` replays it. The open bugs listed in
bench/README.md (records written again after librdkafka's epoch bump, a client gone during
sendfile logged as unexpected) are reported under ``known``, not failed on.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SEED = 7
SOAK = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


def _can_make_namespaces() -> bool:
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("unshare") is None:
        return False
    name = f"tsk{os.getpid()}probe"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, check=False).returncode == 0
    if made:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return made


@pytest.mark.skipif(not _can_make_namespaces(), reason="needs root, ip and unshare (network namespaces, tmpfs)")
@pytest.mark.timeout(1000)      # about 3 minutes: 1.5 of faults, the cluster's start, the checks
def test_short_seeded_soak_finds_no_anomaly(tmp_path):
    run = subprocess.run([sys.executable, str(SOAK), "--short", "--seed", str(SEED), "--root", str(tmp_path / "nodes"),
                          "--results", str(tmp_path), "--png", "soak.png"],
                         capture_output=True, text=True, timeout=900, check=False)
    report = tmp_path / "soak_latest.json"
    assert report.exists(), f"no report (exit {run.returncode})\n{run.stdout[-3000:]}\n{run.stderr[-5000:]}"
    out = json.loads(report.read_text())
    assert run.returncode == 0 and not out["anomalies"], f"{run.stdout[-8000:]}\n{out.get('logs_tail', '')}"
    # the run did what it is for: every fault kind, every workload at work
    assert sorted(out["kinds_done"]) == sorted(
        ["kill", "pause", "isolate", "controller-split", "one-way", "s3-outage", "disk-full", "slow-disk",
         "clock-step", "lost-object"]), out["kinds_done"]
    assert all(n > 100 for n in out["acknowledged"].values()), out["acknowledged"]
    assert out["txn_outcomes"].get("commit", 0) >= 10, out["txn_outcomes"]
    assert all(n > 0 for n in out["group_reads"].values()), out["group_reads"]
    assert out["churn"]["created"] >= 3, out["churn"]
    assert (tmp_path / "soak.png").stat().st_size > 10_000
