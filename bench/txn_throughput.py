"""Transactional produce throughput on 3 brokers, replication factor 3 (issue 23, Performance).

    PYTHONPATH=src .venv/bin/python bench/txn_throughput.py              # about 3 min
    PYTHONPATH=src .venv/bin/python bench/txn_throughput.py --quick      # about 1 min

Starts ``tierlog up --controllers 1 --brokers 3`` in a temp dir (bench/replication.py's
``Cluster``); every phase writes 1 KiB values round-robin to a topic of its own with
``--partitions`` partitions (3: one leader per broker), replication factor 3 and
``min.insync.replicas`` 2, from one confluent-kafka producer in this process (linger.ms 5).

1. commits/s: a transactional producer commits transactions of 1, 10 and 100 records for
   ``--seconds`` each (begin, produce, commit_transaction, the next one only once it returned).
2. produce MiB/s, in the same run, ``--records`` records each, ``--repeat`` times taking turns:
   idempotent (acks=all, enable.idempotence: the first produce() to the end of flush()) against
   transactional with 100 records per transaction (the first begin_transaction() to the last
   commit_transaction()), from one producer and from ``--producers`` side by side (threads, a
   transactional id each, the records shared out).  The goal is a ratio transactional /
   idempotent >= 0.7.  One producer's transactions are a chain of round trips, so more
   producers show what the cluster can carry (bench/README.md, "Transactions").

Each phase also gives the CPU the three brokers used per 100 records (``/proc/<pid>/stat``) and
the requests they answered per API (their ``kafka_network_requestmetrics_requests_total``), per
transaction for the transactional phases.  ``--focus`` runs only the MiB/s phases with
``--producers`` producers (no commits/s phases, no one-producer phases): the 8-producer case,
where the brokers' CPU is the bound.
Writes ``bench/results/txn_throughput_<timestamp>.json`` and ``txn_throughput_latest.json``
with the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # bench/profile.py shadows profile
sys.path.insert(0, str(HERE))

import workload  # before spark_read, which takes bench/ off sys.path
from confluent_kafka import Producer
from machine import facts as machine_facts
from profile import py_spy
from prometheus_client.parser import text_string_to_metric_families
from replication import Cluster
from run import proc_cpu_s
from spark_read import write_results

RECORD = 1024
MIB = 1 << 20
TOPIC_CONFIG = {"min.insync.replicas": "2"}
PER_TXN = (1, 10, 100)
REQUESTS = "kafka_network_requestmetrics_requests_total"
CLIENT = {"linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.kbytes": 512 * 1024}


class Phases:
    """Each phase on a topic of its own: ``<name>-<n>``."""

    def __init__(self, bootstrap: str, partitions: int, broker_pids: list[int], metrics: list[str],
                 profile: str | None = None):
        self.bootstrap, self.partitions, self.count = bootstrap, partitions, 0
        self.broker_pids, self.metrics = broker_pids, metrics
        self.profile = profile      # a results file stem: py-spy on every broker in the transactional phases
        self.value = os.urandom(RECORD)

    def topic(self, name: str) -> str:
        self.count += 1
        topic = f"{name}-{self.count}"
        workload.ensure_topic(self.bootstrap, topic, self.partitions, 3, TOPIC_CONFIG)
        return topic

    def produce(self, p: Producer, topic: str, n: int, first: int) -> None:
        for i in range(first, first + n):
            while True:
                try:
                    p.produce(topic, self.value, partition=i % self.partitions)
                    break
                except BufferError:         # librdkafka's queue is full: serve deliveries first
                    p.poll(0.005)

    def transactional(self, per_txn: int, seconds: float | None = None, records: int | None = None,
                      producers: int = 1) -> dict:
        """``producers`` side by side, each committing transactions of ``per_txn`` records for
        ``seconds`` or until it wrote its share of ``records``."""
        topic = self.topic(f"txn{per_txn}")
        clients = [Producer({"bootstrap.servers": self.bootstrap, "transactional.id": f"{topic}-{i}", **CLIENT})
                   for i in range(producers)]
        for p in clients:
            p.init_transactions(60)
        spies = self._sample(topic) if records is not None else []
        t, cpu, requests = time.perf_counter(), self.broker_cpu_s(), self.requests()
        share = None if records is None else records // producers
        commits = side_by_side([lambda p=p: self._commit_loop(p, topic, per_txn, t, seconds, share)
                                for p in clients])
        for spy in spies:
            spy.send_signal(signal.SIGINT)
            spy.wait(120)
        return rates(time.perf_counter() - t, sum(commits) * per_txn, commits=sum(commits), per_txn=per_txn,
                     producers=producers, broker_cpu_s=self.broker_cpu_s() - cpu,
                     requests=dict(self.requests() - requests))

    def _sample(self, topic: str) -> list[subprocess.Popen]:
        """``--profile``: py-spy --native (it pauses the brokers: their CPU split, not their speed) on each broker, one folded file each (idle threads left out)."""
        if self.profile is None:
            return []
        spies = [subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--native", "--format", "raw",
                                   "--rate", "200", "-o", str(HERE / "results" / f"{self.profile}-{topic}-b{i}.folded")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i, pid in enumerate(self.broker_pids)]
        time.sleep(1.0)
        return spies

    def _commit_loop(self, p: Producer, topic: str, per_txn: int, t: float, seconds: float | None,
                     records: int | None) -> int:
        commits = 0
        while (time.perf_counter() - t < seconds) if seconds is not None else (commits * per_txn < records):
            p.begin_transaction()
            self.produce(p, topic, per_txn, commits * per_txn)
            p.commit_transaction(60)
            commits += 1
        return commits

    def idempotent(self, records: int, producers: int = 1) -> dict:
        topic = self.topic("idempotent")
        clients = [Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                             **CLIENT}) for _ in range(producers)]
        for p in clients:
            p.list_topics(topic, timeout=10)           # connected before the clock starts
        t, cpu, requests = time.perf_counter(), self.broker_cpu_s(), self.requests()
        side_by_side([lambda p=p: self._flushed(p, topic, records // producers) for p in clients])
        return rates(time.perf_counter() - t, records // producers * producers, producers=producers,
                     broker_cpu_s=self.broker_cpu_s() - cpu, requests=dict(self.requests() - requests))

    def broker_cpu_s(self) -> float:
        """CPU seconds the brokers have used so far (all three processes, from /proc)."""
        return sum(proc_cpu_s(pid) for pid in self.broker_pids)

    def requests(self) -> Counter:
        """Requests the brokers have answered so far, per request name (all three, from /metrics)."""
        out: Counter = Counter()
        for address in self.metrics:
            with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as resp:
                text = resp.read().decode()
            for family in text_string_to_metric_families(text):
                for s in family.samples:
                    if s.name == REQUESTS:
                        out[s.labels["request"]] += int(s.value)
        return out

    def _flushed(self, p: Producer, topic: str, records: int) -> None:
        self.produce(p, topic, records, 0)
        assert p.flush(120) == 0, "records left undelivered"


def side_by_side(calls: list) -> list:
    """Each call on a thread of its own (librdkafka releases the GIL while it waits); their results."""
    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def rates(seconds: float, records: int, **more) -> dict:
    out = {"seconds": seconds, "records": records, "mib_s": records * RECORD / MIB / seconds, **more}
    out["broker_cpu_ms_per_100_records"] = 1000 * more["broker_cpu_s"] * 100 / max(records, 1)
    if "commits" in more:
        out["commits_s"] = more["commits"] / seconds
        out["broker_cpu_ms_per_txn"] = 1000 * more["broker_cpu_s"] / max(more["commits"], 1)
        out["requests_per_txn"] = {k: round(v / max(more["commits"], 1), 2) for k, v in more["requests"].items()}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20, help="per commits/s phase")
    ap.add_argument("--records", type=int, help="per MiB/s phase (30,000; --quick 20,000)")
    ap.add_argument("--repeat", type=int, default=2, help="MiB/s phases per kind, taking turns")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--producers", type=int, default=8, help="the MiB/s phases also with this many producers")
    ap.add_argument("--quick", action="store_true", help="5 s phases, 20,000 records, no repeat")
    ap.add_argument("--focus", action="store_true", help="only the MiB/s phases with --producers producers")
    ap.add_argument("--profile", metavar="STEM", help="py-spy each broker in the transactional MiB/s phases: "
                                                       "results/STEM-<topic>-b<i>.folded")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.repeat = 5, 1
    args.records = args.records or (20_000 if args.quick else 30_000)     # --quick --records N: longer MiB/s phases
    out: dict = {"args": vars(args), "machine_before": machine_facts(), "commits": [], "idempotent": [],
                 "transactional_100": []}
    with tempfile.TemporaryDirectory(prefix="tierlog-bench-txn-") as tmp:
        cluster = Cluster(Path(tmp), brokers=3, controllers=1)
        try:
            brokers = [n for n in cluster.nodes.values() if "broker" in n["roles"]]
            phases = Phases(cluster.bootstrap, args.partitions, [n["pid"] for n in brokers],
                            [n["metrics"] for n in brokers], args.profile)
            phases.transactional(10, seconds=2)          # warm-up: __transaction_state, connections
            for per_txn in () if args.focus else PER_TXN:
                out["commits"].append(phases.transactional(per_txn, seconds=args.seconds))
                print(line(out["commits"][-1]), flush=True)
            for _ in range(args.repeat):
                for producers in producer_counts(args):
                    for kind, phase in (("idempotent", lambda n: phases.idempotent(args.records, n)),
                                        ("transactional_100",
                                         lambda n: phases.transactional(100, records=args.records, producers=n))):
                        out[kind].append(phase(producers))
                        print(f"{kind}:", line(out[kind][-1]), flush=True)
        finally:
            cluster.stop()
    out["ratio_mib_s"] = {}
    for producers in producer_counts(args):
        median = {k: statistics.median(r["mib_s"] for r in out[k] if r["producers"] == producers)
                  for k in ("idempotent", "transactional_100")}
        out["ratio_mib_s"][producers] = ratio = median["transactional_100"] / median["idempotent"]
        print(f"{producers} producer(s): transactional / idempotent MiB/s {ratio:.2f} (goal >= 0.7)")
    out["machine_after"] = machine_facts()
    write_results("txn_throughput", out)
    return 0


def producer_counts(args) -> list[int]:
    return [args.producers] if args.focus else sorted({1, args.producers})


def line(r: dict) -> str:
    per = f"{r['per_txn']} per txn: {r['commits_s']:.1f} commits/s, " if "per_txn" in r else ""
    txn = (f"; {r['broker_cpu_ms_per_txn']:.1f} ms a transaction, requests a transaction: "
           + ", ".join(f"{k} {v:g}" for k, v in sorted(r["requests_per_txn"].items()))) if "commits" in r else ""
    return (f"{per}{r['mib_s']:.1f} MiB/s ({r['records']} records in {r['seconds']:.1f} s, {r['producers']} producers; "
            f"brokers' CPU {r['broker_cpu_ms_per_100_records']:.1f} ms per 100 records{txn})")


if __name__ == "__main__":
    sys.exit(main())
