"""What the brokers do per transaction, counted (issue 36): figures that do not move with the load.

    PYTHONPATH=src .venv/bin/python bench/txn_counts.py                 # about 40 s
    PYTHONPATH=src .venv/bin/python bench/txn_counts.py --profile       # + cProfile of each broker

Starts ``tierlog up --controllers 1 --brokers 3`` (bench/replication.py's ``Cluster``) with
``bench/txn_hooks`` on the brokers' PYTHONPATH, creates a topic of ``--partitions`` partitions
(RF 3, min.insync.replicas 2), and has ``--producers`` transactional confluent-kafka producers
(one thread each) commit 100-record transactions of 1 KiB values for ``--seconds``. Before and
after, it reads the brokers' request metrics, their CPU (``/proc``) and the hooks' counters, and
prints per transaction: requests by API, tasks created by coroutine, the followers' fetch
rounds (partitions named, appends, rounds without records), the brokers' CPU ms; with
``--profile``, the functions with the most calls per transaction over the three brokers' event
loops (cProfile, switched on for the load only: its CPU figure is then the profiled one).
Writes ``bench/results/txn_counts_<timestamp>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import pstats
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # bench/profile.py shadows profile
sys.path.insert(0, str(HERE))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from machine import facts as machine_facts  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from replication import Cluster  # noqa: E402
from run import proc_cpu_s  # noqa: E402
from spark_read import write_results  # noqa: E402

HOOKS = HERE / "txn_hooks"
REQUESTS = "kafka_network_requestmetrics_requests_total"
PER_TXN, RECORD = 100, 1024
SETTLE_S = 1.5                      # the hooks write their counters every 0.5 s
PROFILE_SIGNAL = signal.SIGRTMIN + 3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--producers", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile each broker's event loop during the load")
    ap.add_argument("--top", type=int, default=30, help="functions listed with --profile")
    args = ap.parse_args()
    out: dict = {"args": vars(args), "machine_before": machine_facts()}
    with tempfile.TemporaryDirectory(prefix="tierlog-bench-txn-counts-") as tmp:
        counts_dir = Path(tmp) / "counts"
        counts_dir.mkdir()
        os.environ["TIERLOG_TXN_COUNTS"] = str(counts_dir)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOKS), os.environ.get("PYTHONPATH")) if p)
        cluster = Cluster(Path(tmp), brokers=3, controllers=1)
        try:
            out.update(_run(cluster, args, counts_dir))
        finally:
            cluster.stop()
    out["machine_after"] = machine_facts()
    write_results("txn_counts", out)
    return 0


def _run(cluster: Cluster, args, counts_dir: Path) -> dict:
    brokers = [n for n in cluster.nodes.values() if "broker" in n["roles"]]
    pids = [n["pid"] for n in brokers]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in admin.create_topics([NewTopic("txn-counts", args.partitions, 3,
                                           config={"min.insync.replicas": "2"})]).values():
        f.result()
    producers = [Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": f"txn-counts-{i}",
                           "linger.ms": 5}) for i in range(args.producers)]
    for p in producers:
        p.init_transactions()
    time.sleep(SETTLE_S)
    before = _state(brokers, pids, counts_dir)
    if args.profile:
        _signal(pids)
    started = time.monotonic()
    commits = _load(producers, args.partitions, started + args.seconds)
    seconds = time.monotonic() - started
    if args.profile:
        _signal(pids)
    time.sleep(SETTLE_S)
    after = _state(brokers, pids, counts_dir)
    n = max(commits, 1)

    def per_txn(key: str) -> dict:
        return {k: round(v / n, 2) for k, v in (after[key] - before[key]).most_common() if v}

    result = {"transactions": commits, "seconds": round(seconds, 2), "commits_s": round(commits / seconds, 1),
              "broker_cpu_ms_per_txn": round((after["cpu_s"] - before["cpu_s"]) * 1000 / n, 2),
              "requests_per_txn": per_txn("requests"), "tasks_per_txn": per_txn("tasks"),
              "follower_rounds_per_txn": per_txn("rounds")}
    for key, value in result.items():
        print(f"{key}: {value}")
    if args.profile:
        result["profile_top_calls_per_txn"] = _profile(counts_dir, n, args.top)
    return result


def _load(producers: list, partitions: int, deadline: float) -> int:
    """Commit 100-record transactions from every producer until ``deadline``; how many committed."""
    commits = [0] * len(producers)
    value = b"x" * RECORD

    def run(i: int) -> None:
        p = producers[i]
        while time.monotonic() < deadline:
            p.begin_transaction()
            for k in range(PER_TXN):
                p.produce("txn-counts", value, partition=k % partitions)
            p.commit_transaction()
            commits[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(producers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(commits)


def _state(brokers: list[dict], pids: list[int], counts_dir: Path) -> dict:
    requests, tasks, rounds = Counter(), Counter(), Counter()
    for node in brokers:
        with urllib.request.urlopen(f"http://{node['metrics']}/metrics", timeout=5) as resp:
            for family in text_string_to_metric_families(resp.read().decode()):
                for s in family.samples:
                    if s.name == REQUESTS:
                        requests[s.labels["request"]] += int(s.value)
    for pid in pids:
        path = counts_dir / f"counts-{pid}.json"
        if path.exists():
            counts = json.loads(path.read_text())
            tasks.update(counts["tasks"])
            rounds.update(counts["rounds"])
    return {"requests": requests, "tasks": tasks, "rounds": rounds, "cpu_s": sum(proc_cpu_s(p) for p in pids)}


def _signal(pids: list[int]) -> None:
    for pid in pids:
        os.kill(pid, PROFILE_SIGNAL)


def _profile(counts_dir: Path, n: int, top: int) -> list[dict]:
    """The functions with the most calls per transaction, over the brokers' profiles."""
    deadline = time.monotonic() + 10
    files = []
    while time.monotonic() < deadline and not files:
        files = [str(f) for f in counts_dir.glob("prof-*.pstats")]
        time.sleep(0.2)
    if not files:
        return []
    stats = pstats.Stats(*files).stats      # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda kv: -kv[1][1])[:top]
    out = [{"function": f"{name} {path.split('src/')[-1]}:{line}", "calls_per_txn": round(calls / n, 1),
            "own_us_per_txn": round(own / n * 1e6)} for (path, line, name), (_cc, calls, own, _cum, _) in rows]
    for row in out:
        print(f"{row['calls_per_txn']:8.1f} calls {row['own_us_per_txn']:7d} µs  {row['function']}")
    return out


if __name__ == "__main__":
    sys.exit(main())
