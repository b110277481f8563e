"""Single-node produce/consume benchmark: tierlog (on disk) vs Tansu (in memory).

    .venv/bin/python bench/run.py [--records N] [--quick] [--brokers tierlog,tansu]

For each broker: start it on a free loopback port, run the phases below, each
as its own client process (bench/workload.py), stop it.  Then write
bench/results/<timestamp>-single-node.json and latest-single-node.json, print
a table with tierlog/Tansu ratios and draw bench/results/single-node.png.

Phases: produce N records with acks=1, produce N with acks=all (another topic),
consume the acks=1 topic from the beginning, then produce at a fixed rate
(default 50 MiB/s for 60 s, acks=all) for the latency at that rate.  Around
each phase the broker's CPU time is read from /proc, the client's from rusage.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import aggregate
import brokers
import machine
import procstate
import report

RESULTS = HERE / "results"
WORKLOAD = HERE / "workload.py"
PHASE_TIMEOUT_S = 900
QUICK_RECORDS = 20_000
QUICK_RATE_SECONDS = 3.0
DEFAULT_RECORDS = 3_000_000
DEFAULT_REPEAT = 3
DEFAULT_RATE_SECONDS = 60.0
DEFAULT_PARTITIONS = 1


@dataclass(frozen=True)
class Phase:
    name: str
    argv: tuple


def sessions(args) -> list[list[Phase]]:
    """Phases grouped by broker instance: each group gets a freshly started, empty
    broker, so the fixed-rate run does not inherit the closed-loop runs' data."""
    common = ("--partitions", str(args.partitions), "--create")
    closed_loop = [
        Phase("produce_acks1", ("produce", "--topic", "bench-acks1", "--acks", "1",
                                "--records", str(args.records), *common)),
        Phase("produce_acksall", ("produce", "--topic", "bench-acksall", "--acks", "all",
                                  "--records", str(args.records), *common)),
        Phase("consume", ("consume", "--topic", "bench-acks1", "--expect", str(args.records))),
    ]
    fixed_rate = [Phase("rate", ("rate", "--topic", "bench-rate", "--acks", "all", "--mib-per-s",
                                 str(args.rate_mib), "--seconds", str(args.rate_seconds), *common))]
    return [closed_loop, fixed_rate]


def proc_cpu_s(pid: int) -> float:
    """user+system CPU seconds of process ``pid`` and its waited-for children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def proc_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def machine_cpu_s() -> dict:
    """Seconds of all CPUs since boot by state, from the first line of /proc/stat."""
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    values = Path("/proc/stat").read_text().splitlines()[0].split()[1:1 + len(names)]
    return {n: int(v) / os.sysconf("SC_CLK_TCK") for n, v in zip(names, values)}


def _machine_delta(before: dict, broker_cpu: float | None, client_cpu: float) -> dict:
    """What the whole machine did during a phase; ``other_cpu_s`` is CPU used by
    neither the broker nor the client (other people's work on a shared machine)."""
    after = machine_cpu_s()
    d = {k: after[k] - before[k] for k in after}
    busy = sum(v for k, v in d.items() if k not in ("idle", "iowait"))
    return {"busy_cpu_s": busy, "iowait_s": d["iowait"], "steal_s": d["steal"],
            "other_cpu_s": busy - client_cpu - (broker_cpu or 0.0)}


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_phase(broker: brokers.Broker, phase: Phase) -> dict:
    """Run one workload process; returns its figures plus broker and client CPU."""
    cmd = [sys.executable, str(WORKLOAD), phase.argv[0], "--bootstrap", broker.bootstrap,
           *phase.argv[1:]]
    pid = broker.pid
    cpu0, client0, t0, box0 = proc_cpu_s(pid), _children_cpu_s(), time.monotonic(), machine_cpu_s()
    try:
        with procstate.StateSampler(pid) as states:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PHASE_TIMEOUT_S,
                                  check=False)
    except subprocess.TimeoutExpired as e:
        return {"failed": True, "stderr_tail": f"timed out after {e.timeout}s"}
    wall = time.monotonic() - t0
    out = {"wall_s": wall, "client_cpu_s": _children_cpu_s() - client0,
           "broker_states": states.summary()}
    if broker.alive():
        out["broker_cpu_s"] = proc_cpu_s(pid) - cpu0
        out["broker_rss_mib"] = proc_rss_mib(pid)
    out["machine"] = _machine_delta(box0, out.get("broker_cpu_s"), out["client_cpu_s"])
    if proc.returncode != 0:
        return {**out, "failed": True, "stderr_tail": proc.stderr[-3000:]}
    return {**out, **json.loads(proc.stdout.strip().splitlines()[-1])}


def bench_broker(name: str, args, workroot: Path) -> dict:
    """Every session of phases on its own fresh instance of broker ``name``."""
    results = {"broker": name, "phases": {}, "instances": []}
    for i, session in enumerate(sessions(args)):
        instance = run_session(name, session, workroot / f"{name}-{i}")
        results["phases"].update(instance.pop("phases", {}))
        results["instances"].append(instance)
        if "start_error" in instance:
            results["start_error"] = instance["start_error"]
            break
    return results


def run_session(name: str, session: list[Phase], workdir: Path) -> dict:
    """Start ``name``, run the phases, stop it; never raises for a broker failure."""
    try:
        broker = brokers.start_broker(name, workdir)
    except brokers.BrokerStartError as e:
        return {"start_error": str(e)}
    out = {"phases": {}}
    try:
        for phase in session:
            print(f"[{name}] {phase.name} ...", file=sys.stderr, flush=True)
            out["phases"][phase.name] = run_phase(broker, phase)
            if not broker.alive():
                out["died_after"] = phase.name
                break
    finally:
        out["data_dir_mib"] = _dir_mib(broker.workdir / "data")
        out["exit_code"] = broker.stop()
        out["log_problems"] = _log_problems(broker)
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def _dir_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20 if path.exists() else 0.0


def _log_problems(broker: brokers.Broker) -> dict:
    """Lines of the broker's own log that look like trouble: count and the first few."""
    markers = ("ERROR", "Traceback", "WARN", "panicked")
    lines = broker.stderr_path.read_text(errors="replace").splitlines()
    lines += broker.stdout_path.read_text(errors="replace").splitlines()
    bad = [ln for ln in lines if any(m in ln for m in markers)]
    return {"count": len(bad), "first": bad[:10]}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=DEFAULT_RECORDS, help="records per produce run")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke run: {QUICK_RECORDS} records, {QUICK_RATE_SECONDS:g} s at the fixed rate")
    p.add_argument("--brokers", default=",".join(brokers.BROKERS))
    p.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS)
    p.add_argument("--rate-mib", type=float, default=50.0, help="MiB/s of the fixed-rate run")
    p.add_argument("--rate-seconds", type=float, default=DEFAULT_RATE_SECONDS,
                   help="longer than vm.dirty_expire_centisecs (30 s), so page-cache "
                        "writeback happens during the run")
    p.add_argument("--repeat", type=int, default=None,
                   help=f"runs per broker, interleaved; the table shows medians (min-max); "
                        f"default {DEFAULT_REPEAT}, 1 with --quick")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.quick:
        args.records, args.rate_seconds = QUICK_RECORDS, QUICK_RATE_SECONDS
    args.repeat = args.repeat or (1 if args.quick else DEFAULT_REPEAT)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.brokers.split(",") if n.strip()]
    doc = {"kind": "single-node", "settings": _settings(args), "machine": machine.facts(),
           "brokers": {}, "runs": {n: [] for n in names}}
    workroot = Path(tempfile.mkdtemp(prefix="tierlog-bench-"))
    try:
        for r in range(args.repeat):  # interleaved, so load from others hits both alike
            for name in names:
                print(f"== run {r + 1}/{args.repeat}: {name}", file=sys.stderr, flush=True)
                doc["runs"][name].append(bench_broker(name, args, workroot / f"run-{r}"))
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    for name, runs in doc["runs"].items():
        doc["brokers"][name] = {**aggregate.combine(runs), **_start_error(runs)}
    doc["machine"]["loadavg_end"] = machine.loadavg()
    _write(doc, args.out)
    return 0 if not any("start_error" in b for b in doc["brokers"].values()) else 1


def _start_error(runs: list[dict]) -> dict:
    errors = [r["start_error"] for r in runs if "start_error" in r]
    return {"start_error": errors[0]} if errors else {}


def _settings(args) -> dict:
    return {"records": args.records, "record_size": 1024, "partitions": args.partitions,
            "linger_ms": 5, "rate_mib_per_s": args.rate_mib, "rate_seconds": args.rate_seconds,
            "rate_acks": "all", "repeat": args.repeat, "quick": args.quick}


def _write(doc: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    text = json.dumps(doc, indent=2)
    (out / f"{stamp}-single-node.json").write_text(text)
    (out / "latest-single-node.json").write_text(text)
    print(report.markdown(doc))
    report.plot(doc, out / "single-node.png")
    print(f"\nwrote {out / f'{stamp}-single-node.json'} and {out / 'single-node.png'}")


if __name__ == "__main__":
    sys.exit(main())
