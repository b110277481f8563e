"""The Jepsen-style transactions checker, long: a seeded workload under faults, then the anomalies.

    PYTHONPATH=src .venv/bin/python bench/txn_checker.py --seconds 300 --seed 1

Starts a cluster of 1 controller and 3 brokers here (tests/integration/cluster.py), runs
``tests/support/txn_workload.py`` on an RF 3 topic for ``--seconds`` (transactional producers,
read_committed group consumers, a broker killed -9 and restarted every ``--interval`` seconds of
calm: a partition leader, a transaction coordinator or the group coordinator), drains every
partition and checks the history with ``tests/support/txn_anomalies.py``.  Prints the outcomes,
the faults and the anomaly counts; writes ``bench/results/txn_checker_<timestamp>.json`` and
``txn_checker_latest.json``.  Exits 1 when an anomaly was found.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # bench/profile.py shadows profile
for helpers in ("tests/integration", "tests/support"):
    sys.path.insert(0, str(HERE.parent / helpers))
sys.path.insert(0, str(HERE))

import txn_workload
from cluster import FAST_REPLICATION, Cluster, running
from spark_read import write_results
from txn_anomalies import check, counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=300, help="how long the faults go on")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--interval", type=float, default=5, help="seconds of calm before each fault")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--consumers", type=int, default=2)
    args = ap.parse_args()
    out: dict = {**vars(args), "load_avg_start": os.getloadavg()}
    t = time.monotonic()
    with running(Cluster(Path(tempfile.mkdtemp(prefix="txn-checker-")), controllers=1, brokers=3,
                         props={**FAST_REPLICATION, **txn_workload.CLUSTER_PROPS})) as cluster:
        result = txn_workload.run(cluster, "jepsen", args.seed, args.seconds, args.partitions, args.producers,
                                  args.consumers, args.interval)
    h = result.history
    anomalies = check(h)
    out.update(wall_s=time.monotonic() - t, load_avg_end=os.getloadavg(),
               outcomes=dict(collections.Counter(t.outcome for t in h.txns)),
               records_written=sum(len(t.writes) for t in h.txns), producers_replaced=result.replaced,
               sessions=len(h.sessions) - 1, reads=sum(len(s.reads) for s in h.sessions[:-1]),
               drained=len(h.sessions[-1].reads), faults=dict(collections.Counter(f.kind for f in result.faults)),
               anomalies=counts(anomalies), examples=[f"{a.kind}: {a.detail}" for a in anomalies[:20]],
               errors=[repr(e) for e in result.errors], events=result.events)
    write_results("txn_checker", out)
    return 1 if anomalies or result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
