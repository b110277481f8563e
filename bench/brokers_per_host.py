"""One broker process per host against several: does a second process add throughput?

    python bench/brokers_per_host.py                      # 1 and 2 brokers, alternating, 2 rounds
    python bench/brokers_per_host.py --brokers 1,2,3 --rounds 1 --records 500000

A broker is one asyncio process, so it uses at most one core; on a host with more
cores, more broker processes (each a broker of its own, ``broker.rack`` = the host
so placement keeps a partition's replicas on different hosts) are the way to use
them (issue 20, item 4). Per run: ``tierlog up --controllers 1 --brokers B`` in a
temp dir, one topic of ``--partitions`` partitions RF 1, and a closed-loop acks=1
producer (``workload.py produce``) of ``--records`` 1 KiB records; MiB/s, the
brokers' CPU-seconds (``/proc/<pid>/stat``) and the client's. Results go to
``results/brokers_per_host_latest.json``.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from partitions import cpu_seconds
from replication import Cluster

HERE = Path(__file__).resolve().parent


def run_once(brokers: int, records: int, partitions: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="tierlog-bph-") as tmp:
        cluster = Cluster(Path(tmp), brokers=brokers, controllers=1)
        try:
            pids = [n["pid"] for n in cluster.nodes.values() if "broker" in n["roles"]]
            before = sum(cpu_seconds(p) for p in pids)
            client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.monotonic()
            out = subprocess.run([sys.executable, str(HERE / "workload.py"), "produce", "--bootstrap",
                                  cluster.bootstrap, "--topic", "t", "--records", str(records), "--acks", "1",
                                  "--partitions", str(partitions), "--create"],
                                 capture_output=True, text=True, check=True)
            wall = time.monotonic() - started
            client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            return {"brokers": brokers, "mib_per_s": round(figures["mib_per_s"], 1), "wall_s": round(wall, 2),
                    "broker_cpu_s": round(sum(cpu_seconds(p) for p in pids) - before, 2),
                    "client_cpu_s": round(client_after.ru_utime + client_after.ru_stime
                                          - client_before.ru_utime - client_before.ru_stime, 2)}
        finally:
            cluster.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--brokers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    runs = []
    for _ in range(args.rounds):
        for b in args.brokers:
            runs.append(run_once(b, args.records, args.partitions))
            print(json.dumps(runs[-1]), flush=True)
    doc = {"bench": "brokers_per_host", "records": args.records, "partitions": args.partitions, "runs": runs}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "brokers_per_host_latest.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
