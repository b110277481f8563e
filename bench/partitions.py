"""Cost by number of partitions: does a record cost the same on 300 partitions as on 3?

    python bench/partitions.py                           # P = 3, 30, 300, 3000; 20 s steps
    python bench/partitions.py --partitions 3,300 --seconds 10 --rates 2000,5000
    python bench/partitions.py --profile 300:round-robin:5000   # py-spy on the busiest broker at that step

Starts ``tierlog up --controllers 1 --brokers 3`` in a temp dir.  For each
partition count P: creates one topic (RF 3, ``min.insync.replicas=2``) and
times it until every partition has a leader, lets it settle, measures the
brokers' idle CPU, then produces 1 KiB records acks=all from a fixed-rate
librdkafka producer (``bench/workload.py rate``, linger.ms 5) at each rate of
``--rates``, once with librdkafka's sticky partitioner and once round-robin
(record i to partition i mod P: every batch small, the shape of keyed
traffic); then deletes the topic.  Per step: latency p50/p99, whether the
producer kept up, and broker CPU-seconds per 100k records (``/proc/<pid>/stat``
of the three broker processes, over the step).

A step is *kept up* as in ``replication.py``: the producer never fell more than
1 s behind its schedule and the last records arrived within 1 s of the end.

Writes ``results/partitions_<timestamp>.json``, ``results/partitions_latest.json``
(or ``--name``) and a plot of CPU per 100k records and p99 by P.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from confluent_kafka.admin import AdminClient, NewTopic
from machine import facts as machine_facts
from replication import Cluster

RECORD_SIZE = 1024
MIB = 1 << 20
PARTITIONS = (3, 30, 300, 3000)
RATES = (2_000, 5_000)
SPREADS = ("sticky", "round-robin")
SETTLE_S = 10.0
IDLE_S = 10.0
MAX_LAG_MS = 1000.0
CREATE_TIMEOUT_S = 300.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class BrokerCpu:
    """CPU-seconds the broker processes used between ``start`` and ``stop``."""

    def __init__(self, pids: list[int]):
        self.pids = pids

    def total(self) -> float:
        return sum(cpu_seconds(p) for p in self.pids)

    def per_broker(self) -> list[float]:
        return [cpu_seconds(p) for p in self.pids]


def create_topic(bootstrap: str, topic: str, partitions: int) -> float:
    """Seconds from CreateTopics until every partition has a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    start = time.monotonic()
    futures = admin.create_topics([NewTopic(topic, partitions, 3, config={"min.insync.replicas": "2"})],
                                  operation_timeout=CREATE_TIMEOUT_S, request_timeout=CREATE_TIMEOUT_S)
    futures[topic].result(CREATE_TIMEOUT_S)
    while time.monotonic() - start < CREATE_TIMEOUT_S:
        md = admin.list_topics(topic=topic, timeout=30).topics.get(topic)
        if md and md.error is None and len(md.partitions) == partitions and \
                all(p.leader >= 0 and len(p.isrs) == 3 for p in md.partitions.values()):
            return time.monotonic() - start
        time.sleep(0.5)
    raise RuntimeError(f"{topic}: not every partition has a leader and a full ISR after {CREATE_TIMEOUT_S:.0f} s")


def delete_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic], operation_timeout=60)[topic].result(120)


def run_step(bootstrap: str, topic: str, partitions: int, rate: int, spread: str, seconds: float,
             cpu: BrokerCpu, profile_pid: int | None, profile_out: Path | None) -> dict:
    cmd = [sys.executable, str(HERE / "workload.py"), "rate", "--bootstrap", bootstrap, "--topic", topic,
           "--acks", "all", "--record-size", str(RECORD_SIZE), "--mib-per-s", str(rate * RECORD_SIZE / MIB),
           "--partitions", str(partitions), "--spread", spread, "--seconds", str(seconds)]
    spy = _start_profile(profile_pid, profile_out) if profile_pid else None
    before, wall = cpu.per_broker(), time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 600, check=False)
    used = [a - b for a, b in zip(cpu.per_broker(), before, strict=True)]
    wall = time.monotonic() - wall
    if spy is not None:
        _stop_profile(spy)
    step = {"partitions": partitions, "rate": rate, "spread": spread, "broker_cpu_s": used,
            "broker_cores": sum(used) / wall}
    if out.returncode != 0:
        return {**step, "failed": out.stderr[-2000:]}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    step.update(latency_ms=result["latency_ms"], records=result["records"], seconds=result["seconds"],
                errors=result["errors"], produce_lag_max_ms=result["produce_lag_max_ms"],
                cpu_s_per_100k=100_000 * sum(used) / max(result["records"], 1))
    late_ms = 1000 * (result["seconds"] - seconds)
    step["kept_up"] = not result["errors"] and result["produce_lag_max_ms"] <= MAX_LAG_MS and late_ms <= MAX_LAG_MS
    return step


def _start_profile(pid: int, out: Path) -> subprocess.Popen:
    from profile import py_spy
    return subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--format", "raw", "--rate", "100",
                             "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop_profile(spy: subprocess.Popen) -> None:
    import signal
    spy.send_signal(signal.SIGINT)
    spy.wait(60)


def measure(cluster: Cluster, args, partitions: int, broker_pids: list[int]) -> dict:
    topic = f"scale-{partitions}"
    cpu = BrokerCpu(broker_pids)
    row: dict = {"partitions": partitions, "create_s": create_topic(cluster.bootstrap, topic, partitions)}
    time.sleep(SETTLE_S)
    before = cpu.total()
    time.sleep(IDLE_S)
    row["idle_cores"] = (cpu.total() - before) / IDLE_S
    print(f"P={partitions}: created in {row['create_s']:.1f} s, idle {row['idle_cores']:.3f} cores "
          f"(3 brokers)", flush=True)
    row["steps"] = []
    for spread in args.spreads:
        for rate in args.rates:
            pid, out = _profile_target(args, partitions, spread, rate, broker_pids)
            step = run_step(cluster.bootstrap, topic, partitions, rate, spread, args.seconds, cpu, pid, out)
            row["steps"].append(step)
            print("  " + _line(step), flush=True)
            if not step.get("kept_up"):
                break
    if not args.keep:
        delete_topic(cluster.bootstrap, topic)
    return row


def _profile_target(args, partitions: int, spread: str, rate: int, broker_pids: list[int]):
    if args.profile != (partitions, spread, rate):
        return None, None
    # the broker that leads the most: with RF 3 and P >= 3 every broker leads P/3; the first is as busy
    return broker_pids[0], args.out / f"partitions-profile-P{partitions}-{spread}-{rate}.folded"


def _line(step: dict) -> str:
    head = f"{step['spread']:>11} {step['rate']:>6,} rec/s:"
    if "failed" in step:
        return f"{head} failed: {step['failed'][-300:]}"
    lat = step["latency_ms"]
    return (f"{head} p50 {lat['p50']:8.1f} p99 {lat['p99']:8.1f} ms, {step['cpu_s_per_100k']:5.1f} broker CPU-s "
            f"per 100k, {step['broker_cores']:.2f} cores, {'kept up' if step['kept_up'] else 'NOT kept up'}")


def plot(doc: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for spread in SPREADS:
        for rate in doc["rates"]:
            pts = [(r["partitions"], s) for r in doc["rows"] for s in r["steps"]
                   if s["spread"] == spread and s["rate"] == rate and "latency_ms" in s]
            if not pts:
                continue
            label = f"{spread} {rate // 1000}k rec/s"
            axes[0].plot([p for p, _ in pts], [s["cpu_s_per_100k"] for _, s in pts], marker="o", label=label)
            axes[1].plot([p for p, _ in pts], [s["latency_ms"]["p99"] for _, s in pts], marker="o", label=label)
    axes[0].set(title="broker CPU-s per 100k records", xlabel="partitions (log)", xscale="log")
    axes[1].set(title="p99 latency, ms (log)", xlabel="partitions (log)", xscale="log", yscale="log")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.suptitle(f"tierlog {doc['machine_before'].get('tierlog_commit') or ''}: 3 brokers, RF 3, acks=all, "
                 "1 KiB records")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))


def _profile_arg(text: str) -> tuple[int, str, int]:
    p, spread, rate = text.split(":")
    return int(p), spread, int(rate)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--partitions", type=_ints, default=PARTITIONS)
    p.add_argument("--rates", type=_ints, default=RATES)
    p.add_argument("--spreads", type=lambda s: tuple(s.split(",")), default=SPREADS)
    p.add_argument("--seconds", type=float, default=20.0, help="length of each step")
    p.add_argument("--profile", type=_profile_arg, default=None, metavar="P:SPREAD:RATE")
    p.add_argument("--keep", action="store_true", help="keep each topic (default: deleted after its steps)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting for every node")
    p.add_argument("--name", default="partitions")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"workload": "3 brokers, 1 controller, RF 3, min.insync.replicas 2, acks=all, 1 KiB, linger.ms 5",
           "step_seconds": args.seconds, "rates": list(args.rates), "machine_before": machine_facts(),
           "pythonpath": os.environ.get("PYTHONPATH"),      # another checkout's src/ measured, if set
           "rows": []}
    with tempfile.TemporaryDirectory(prefix="tierlog-bench-parts-") as tmp:
        cluster = Cluster(Path(tmp), brokers=3, controllers=1, settings=dict(kv.split("=", 1) for kv in args.set))
        try:
            brokers = sorted(n for n, info in cluster.nodes.items() if "broker" in info["roles"])
            pids = [cluster.nodes[n]["pid"] for n in brokers]
            for partitions in args.partitions:
                doc["rows"].append(measure(cluster, args, partitions, pids))
        finally:
            cluster.stop()
    doc["machine_after"] = machine_facts()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"{args.name}_{stamp}.json", f"{args.name}_latest.json"):
        (args.out / name).write_text(json.dumps(doc, indent=1))
    plot(doc, args.out / f"{args.name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
