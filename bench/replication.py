"""Replicated produce latency: KIP-951's workload on this machine.

    python bench/replication.py                      # the full ladder, about 10 min
    python bench/replication.py --quick              # smoke run, about 1 min

Starts ``tierlog up --controllers 1 --brokers 3`` in a temp dir, creates a topic
with 3 partitions (one leader per broker), replication factor 3 and
``min.insync.replicas=2``, then produces 1 KiB records from librdkafka on a
fixed schedule (``bench/workload.py rate``) at a ladder of rates, first with
acks=all, then acks=1, each step on a topic of its own.  Per step: the
achieved rate, latency p50/p99/p99.9/max and latency per second of send time.

A step is *kept up* when the client never fell more than ``--max-lag-ms``
behind its schedule, every record was delivered and the last ones arrived
within ``--max-lag-ms`` of the end; the ladder of an acks mode stops at the
first step that is not.  The highest rate kept up, and the highest whose p99
met ``--p99-goal-ms`` (KIP-951: 15 ms), are the headline figures.

Writes ``results/replication_<timestamp>.json``, ``results/replication_latest.json``
and ``results/replication.png`` (latency over time per step, and p99 per rate).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from brokers import UP_PORT_SPAN, free_port
from machine import facts as machine_facts

from tierlog.parent_watch import child_env

RECORD_SIZE = 1024
MIB = 1 << 20
UP_TIMEOUT_S = 90.0
WARMUP_S = 3.0
RATES = (5_000, 10_000, 20_000, 40_000, 60_000, 80_000, 100_000)
QUICK_RATES = (5_000, 20_000)
ACKS = ("all", "1")
TOPIC_CONFIG = {"min.insync.replicas": "2"}


class Cluster:
    """``tierlog up`` as a child process group; ``bootstrap`` once every broker serves."""

    def __init__(self, data_dir: Path, brokers: int, controllers: int, settings: dict | None = None):
        port = free_port(UP_PORT_SPAN)
        self.log_path = data_dir / "up.log"
        self.nodes_dir = data_dir / "data"
        self.nodes: dict[int, dict] = {}       # node id -> {"pid", "roles", "listen", "metrics"} (node lines)
        cmd = [sys.executable, "-m", "tierlog.cli.main", "up", "--data-dir", str(self.nodes_dir),
               "--listen", f"127.0.0.1:{port}", "--controllers", str(controllers), "--brokers", str(brokers)]
        cmd += [a for k, v in (settings or {}).items() for a in ("--set", f"{k}={v}")]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                                         env=child_env())
        self.bootstrap = self._wait_bootstrap()

    def _wait_bootstrap(self) -> str:
        deadline = time.monotonic() + UP_TIMEOUT_S
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            if line.startswith("bootstrap.servers="):
                return line.split("=", 1)[1]
            if line.startswith("node "):        # node <id> roles=... pid=<pid> listen=<host:port> metrics=<host:port>
                words = line.split()
                fields = dict(w.split("=", 1) for w in words[2:] if "=" in w)
                self.nodes[int(words[1])] = {"pid": int(fields["pid"]), "roles": fields.get("roles", ""),
                                             "listen": fields.get("listen"), "metrics": fields.get("metrics")}
            if time.monotonic() > deadline:
                break
        self.stop()
        raise RuntimeError(f"tierlog up did not print bootstrap.servers; see {self.log_path}")

    def node_dir(self, node_id: int) -> Path:
        """``<data-dir>/node-<id>``: its server.properties, node.log and log dir ``data``."""
        return self.nodes_dir / f"node-{node_id}"

    def kill9(self, node_id: int) -> None:
        os.kill(self.nodes[node_id]["pid"], signal.SIGKILL)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _run(cmd: list[str], seconds: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 600, check=False)


def run_step(bootstrap: str, acks: str, rate: int, seconds: float, partitions: int) -> dict:
    """A new topic, WARMUP_S of unmeasured load on it (connections, fetchers), then the step."""
    topic = f"bench-acks{acks}-{rate}"
    cmd = [sys.executable, str(HERE / "workload.py"), "rate", "--bootstrap", bootstrap, "--topic", topic,
           "--acks", acks, "--record-size", str(RECORD_SIZE), "--mib-per-s", str(rate * RECORD_SIZE / MIB),
           "--partitions", str(partitions), "--replication-factor", "3"]
    cmd += [a for k, v in TOPIC_CONFIG.items() for a in ("--topic-config", f"{k}={v}")]
    warmup = _run(cmd + ["--seconds", str(WARMUP_S), "--create"], WARMUP_S)
    out = warmup if warmup.returncode else _run(cmd + ["--seconds", str(seconds), "--timeline"], seconds)
    if out.returncode != 0:
        return {"rate": rate, "acks": acks, "failed": out.stderr[-2000:]}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["rate"] = rate
    return result


def kept_up(step: dict, seconds: float, max_lag_ms: float) -> bool:
    if "failed" in step or step["errors"]:
        return False
    late_end_ms = 1000 * (step["seconds"] - seconds)
    return step["produce_lag_max_ms"] <= max_lag_ms and late_end_ms <= max_lag_ms


def summarize(steps: list[dict], seconds: float, max_lag_ms: float, goal_ms: float) -> dict:
    out = {}
    for acks in ACKS:
        mine = [s for s in steps if s["acks"] == acks and kept_up(s, seconds, max_lag_ms)]
        best = max(mine, key=lambda s: s["rate"], default=None)
        in_goal = [s for s in mine if s["latency_ms"]["p99"] <= goal_ms]
        best_goal = max(in_goal, key=lambda s: s["rate"], default=None)
        out[f"acks={acks}"] = {
            "highest_rate_kept_up": best and best["rate"],
            "latency_ms_at_it": best and {k: best["latency_ms"][k] for k in ("p50", "p99", "p99.9", "max")},
            f"highest_rate_p99_le_{goal_ms:g}ms": best_goal and best_goal["rate"]}
    return out


def plot(doc: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    for ax, acks in zip(axes[:2], ACKS):
        for step in (s for s in doc["steps"] if s["acks"] == acks and s.get("timeline")):
            t = [b["t_s"] for b in step["timeline"]]
            ax.plot(t, [b["p99"] for b in step["timeline"]], label=f"{step['rate'] // 1000}k rec/s")
        ax.axhline(doc["p99_goal_ms"], color="red", linestyle="--", linewidth=1, label="KIP-951 goal (p99)")
        ax.set(title=f"acks={acks}: p99 latency per second", xlabel="seconds into the step",
               ylabel="ms (log scale)", yscale="log")
        ax.legend(fontsize=7)
    ax = axes[2]
    for acks in ACKS:
        ok = [s for s in doc["steps"] if s["acks"] == acks and "latency_ms" in s]
        for key, style in (("p50", ":"), ("p99", "-"), ("p99.9", "--")):
            ax.plot([s["rate"] / 1000 for s in ok], [s["latency_ms"][key] for s in ok], style, marker="o",
                    label=f"acks={acks} {key}")
    ax.axhline(doc["p99_goal_ms"], color="red", linestyle="--", linewidth=1)
    ax.set(title="latency by rate", xlabel="thousand 1 KiB records/s (scheduled)", ylabel="ms (log scale)",
           yscale="log")
    ax.legend(fontsize=7)
    fig.suptitle("tierlog: 3 brokers, RF 3, min.insync.replicas 2, librdkafka, 1 KiB records")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", type=lambda s: tuple(int(x) for x in s.split(",")), default=RATES,
                   help="records/s per step, comma-separated")
    p.add_argument("--seconds", type=float, default=30.0, help="length of each step")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--max-lag-ms", type=float, default=1000.0)
    p.add_argument("--p99-goal-ms", type=float, default=15.0)
    p.add_argument("--quick", action="store_true", help=f"rates {QUICK_RATES}, 10 s steps")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    if args.quick:
        args.rates, args.seconds = QUICK_RATES, 10.0
    doc = {"workload": "KIP-951: 3 brokers, RF 3, acks=all and acks=1, 1 KiB records, librdkafka, linger.ms 5",
           "step_seconds": args.seconds, "p99_goal_ms": args.p99_goal_ms, "machine_before": machine_facts(),
           "steps": []}
    with tempfile.TemporaryDirectory(prefix="tierlog-bench-repl-") as tmp:
        cluster = Cluster(Path(tmp), brokers=3, controllers=1)
        try:
            for acks in ACKS:
                for rate in args.rates:
                    step = run_step(cluster.bootstrap, acks, rate, args.seconds, args.partitions)
                    doc["steps"].append(step)
                    print(_line(step), flush=True)
                    if not kept_up(step, args.seconds, args.max_lag_ms):
                        break
        finally:
            cluster.stop()
    doc["machine_after"] = machine_facts()
    doc["summary"] = summarize(doc["steps"], args.seconds, args.max_lag_ms, args.p99_goal_ms)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"replication_{stamp}.json", "replication_latest.json"):
        (args.out / name).write_text(json.dumps(doc, indent=1))
    plot(doc, args.out / "replication.png")
    print(json.dumps(doc["summary"], indent=1))
    return 0


def _line(step: dict) -> str:
    if "failed" in step:
        return f"acks={step['acks']:>3} {step['rate']:>7,} rec/s: failed: {step['failed'][-300:]}"
    lat = step["latency_ms"]
    return (f"acks={step['acks']:>3} {step['rate']:>7,} rec/s: achieved {step['records_per_s']:>9,.0f} rec/s, "
            f"p50 {lat['p50']:7.1f} p99 {lat['p99']:7.1f} p99.9 {lat['p99.9']:7.1f} max {lat['max']:7.1f} ms, "
            f"schedule lag max {step['produce_lag_max_ms']:.0f} ms, errors {step['errors']}")


if __name__ == "__main__":
    sys.exit(main())
