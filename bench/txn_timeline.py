"""Where the time of one transaction goes: a per-phase timeline (issue 23, Performance).

    PYTHONPATH=src .venv/bin/python bench/txn_timeline.py                 # about 1 min
    PYTHONPATH=src .venv/bin/python bench/txn_timeline.py --raw 2         # and the merged lines of 2 of them
    PYTHONPATH=src .venv/bin/python bench/txn_timeline.py --slowest 2     # and of the 2 slowest
    .venv/bin/python bench/txn_timeline.py --phases results/txn_timeline_after*.json   # phases of past runs

Starts ``tierlog up --controllers 1 --brokers 3`` with the nodes logging at DEBUG (the
transaction coordinator's steps: ``_trace`` in ``broker/transaction_coordinator.py``, and the
marker sender's sends and answers), creates a topic like ``txn_throughput.py``'s (3 partitions,
RF 3, min.insync.replicas 2), and runs one confluent-kafka transactional producer in a child
process with librdkafka's ``debug=eos,protocol`` on its stderr: ``--transactions`` transactions of
1 record, then as many of 100 records, one after the other, after a warm-up.  Every line of both
sides carries the wall clock (librdkafka's to the millisecond, the nodes' asctime too), so they
merge into one timeline; each transaction's steps are given in ms from its ``begin_transaction``.

Prints, per transaction size, the median and the 90th percentile of each phase (``PHASES``: a
write, a held request, a round trip) and of each step's time from the begin, and writes ``bench/results/txn_timeline_<timestamp>.json`` with every transaction's steps.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # bench/profile.py shadows profile
sys.path.insert(0, str(HERE))

import workload  # before spark_read, which takes bench/ off sys.path
from machine import facts as machine_facts
from replication import Cluster

from tierlog.parent_watch import child_env

TOPIC, PARTITIONS, RECORD = "timeline", 3, 1024
TXN_ID = "timeline-0"
SIZES = (1, 100)
WARMUP = 20
CLIENT = {"linger.ms": 5, "batch.size": 1_000_000, "debug": "eos,protocol"}
MARK = "TIMELINE"

# librdkafka: "%7|1764213000.123|PROTOCOL|rdkafka#producer-1| [thrd:...]: ...: Sent ProduceRequest (v9, ..."
_RDK = re.compile(r"^%\d\|(\d+\.\d+)\|(\w+)\|[^|]*\|\s*(.*)$")
_RDK_STEP = re.compile(r"(Sent|Received) (\w+?)(?:Request|Response) \(v\d+.*?(?:rtt ([\d.]+)ms)?\)")
# a node: "2026-11-27 03:10:00,123 DEBUG [tierlog.broker.transaction_coordinator] txn timeline-0: append ONGOING"
_NODE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ \[([\w.]+)\] (.*)$")


def client(bootstrap: str, n: int) -> None:
    """The child: warm-up, then ``n`` transactions of each size, marks on stderr between them."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID, **CLIENT})
    p.init_transactions(60)
    value = os.urandom(RECORD)
    for k, size in enumerate((10,) * WARMUP + tuple(s for s in SIZES for _ in range(n))):
        mark(f"begin {size}")
        p.begin_transaction()
        for i in range(k * size, (k + 1) * size):      # round-robin across transactions, as txn_throughput's
            p.produce(TOPIC, value, partition=i % PARTITIONS)
        mark("commit called")
        p.commit_transaction(60)
        mark("commit returned")
    mark("end")


def mark(what: str) -> None:
    print(f"%7|{time.time():.3f}|{MARK}|client| {what}", file=sys.stderr, flush=True)


def client_events(path: Path) -> list[tuple[float, str]]:
    out = []
    for line in path.read_text(errors="replace").splitlines():
        m = _RDK.match(line)
        if not m:
            continue
        t, facility, text = float(m.group(1)), m.group(2), m.group(3)
        if facility == MARK:
            out.append((t, f"client {text}"))
        elif (s := _RDK_STEP.search(text)) and s.group(2) not in ("Metadata", "ApiVersion", "FindCoordinator"):
            rtt = f" (rtt {s.group(3)} ms)" if s.group(3) else ""
            out.append((t, f"client {s.group(1).lower()} {s.group(2)}{rtt}"))
        elif facility == "TXNSTATE" or "retry" in text.lower() or "backoff" in text.lower():
            out.append((t, f"client {facility}: {text.split(': ', 1)[-1][:120]}"))
    return out


def node_events(cluster: Cluster) -> list[tuple[float, str]]:
    out = []
    for node_id, node in cluster.nodes.items():
        if "broker" not in node["roles"]:
            continue
        for line in (cluster.node_dir(node_id) / "node.log").read_text(errors="replace").splitlines():
            m = _NODE.match(line)
            if m and (m.group(3).startswith(f"txn {TXN_ID}:") or m.group(3).startswith("markers of producer")):
                t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                out.append((t, f"node {node_id} {m.group(3).replace(f'txn {TXN_ID}: ', '')}"))
    return out


def transactions(events: list[tuple[float, str]]) -> list[dict]:
    """The measured transactions: size and (ms from begin, step) for each of their events."""
    out: list[dict] = []
    current = None
    for t, what in sorted(events, key=lambda e: e[0]):     # stable: the client's lines first at a tie
        if what.startswith("client begin "):
            current = {"size": int(what.split()[-1]), "begin": t, "steps": []}
            out.append(current)
        elif what == "client end":
            current = None
        elif current is not None:
            current["steps"].append((round(1000 * (t - current["begin"]), 1), what))
    return out[WARMUP:]


def summary(txns: list[dict]) -> dict:
    """Per size: the total, and per step (its n-th occurrence in a transaction) median and p90 ms from begin."""
    out = {}
    for size in SIZES:
        mine = [x for x in txns if x["size"] == size]
        at: dict[str, list[float]] = {}
        order: list[str] = []
        for x in mine:
            seen: dict[str, int] = {}
            for ms, what in x["steps"]:
                key = _generic(what)
                seen[key] = seen.get(key, 0) + 1
                key = f"{key} #{seen[key]}" if seen[key] > 1 else key
                if key not in at:
                    order.append(key)
                at.setdefault(key, []).append(ms)
        out[size] = [{"step": k, "n": len(at[k]), "median_ms": statistics.median(at[k]),
                      "p90_ms": _p90(at[k])} for k in sorted(order, key=lambda k: statistics.median(at[k]))]
    return out


# the phases of one transaction: (name, first step, last step), each matched by the start of the
# step (the n-th match with "#n"); "last" takes the last match
PHASES = (
    ("AddPartitionsToTxn held for the previous markers", "AddPartitionsToTxn held", "markers written"),
    ("Complete* write", "append COMPLETE", "committed COMPLETE"),
    ("separate Ongoing write", "append ONGOING", "committed ONGOING"),
    ("AddPartitionsToTxn round trip at the client", "client sent AddPartitionsToTxn",
     "client received AddPartitionsToTxn"),
    ("Produce, first sent to last answered", "client sent Produce", "last client received Produce"),
    ("PrepareCommit write", "append PREPARE", "committed PREPARE"),
    ("EndTxn round trip at the client", "client sent EndTxn", "client received EndTxn"),
    ("transaction, begin to commit returned", None, "client commit returned"),
)


def phases(txn: dict) -> dict[str, float]:
    """The ms each phase of ``txn`` took (those it had)."""
    def at(pattern: str | None, after: float = 0.0) -> float | None:
        if pattern is None:
            return 0.0
        last = pattern.startswith("last ")
        hits = [ms for ms, what in txn["steps"] if _bare(what).startswith(pattern.removeprefix("last "))
                and ms >= after]
        return (hits[-1] if last else hits[0]) if hits else None
    out = {}
    for name, first, last in PHASES:
        start = at(first)
        end = None if start is None else at(last, start)
        if end is not None:
            out[name] = end - start
    return out


def phase_table(txns: list[dict]) -> list[str]:
    """Per size and phase: median (90th percentile) ms, and in how many transactions it occurred."""
    lines = []
    for size in sorted({x["size"] for x in txns}):
        mine = [phases(x) for x in txns if x["size"] == size]
        lines.append(f"{size} record(s) per transaction, {len(mine)} transactions: median (p90) ms, n")
        for name, _first, _last in PHASES:
            ms = [p[name] for p in mine if name in p]
            if ms:
                lines.append(f"  {statistics.median(ms):5.0f} ({_p90(ms):4.0f}) {len(ms):4d}  {name}")
    return lines


def _bare(what: str) -> str:
    return re.sub(r"^node \d+ ", "", what)


def _generic(what: str) -> str:
    return re.sub(r"\(rtt [\d.]+ ms\)|producer \d+", "", what).strip()


def _p90(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(0.9 * len(values)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=50, help="per size")
    ap.add_argument("--raw", type=int, default=0, help="print the merged lines of this many transactions per size")
    ap.add_argument("--slowest", type=int, default=0, help="print the merged lines of the slowest ones too")
    ap.add_argument("--set", action="append", default=[], help="a node setting key=value (repeatable)")
    ap.add_argument("--label", default="", help="a prefix of the results file's timestamp")
    ap.add_argument("--phases", nargs="+", type=Path, help="only print the phase table of these results files")
    ap.add_argument("--client", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        client(args.client[0], int(args.client[1]))
        return 0
    if args.phases:
        print("\n".join(phase_table([x for f in args.phases for x in json.loads(f.read_text())["transactions"]])))
        return 0
    out: dict = {"args": vars(args), "machine_before": machine_facts()}
    os.environ["TIERLOG_LOG_LEVEL"] = "DEBUG"
    settings = dict(s.split("=", 1) for s in args.set)
    with tempfile.TemporaryDirectory(prefix="tierlog-bench-txn-timeline-") as tmp:
        cluster = Cluster(Path(tmp), brokers=3, controllers=1, settings=settings)
        try:
            workload.ensure_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
            stderr = Path(tmp) / "client.log"
            with open(stderr, "wb") as err:
                subprocess.run([sys.executable, __file__, "--client", cluster.bootstrap, str(args.transactions)],
                               stderr=err, check=True, env=child_env())
            txns = transactions(client_events(stderr) + node_events(cluster))
        finally:
            cluster.stop()
    out["machine_after"] = machine_facts()
    out["summary"] = summary(txns)
    out["transactions"] = txns
    print("\n".join(phase_table(txns)))
    for size, steps in out["summary"].items():
        print(f"\n{size} record(s) per transaction: ms from begin_transaction, median (p90)")
        for s in steps:
            print(f"  {s['median_ms']:7.1f} ({s['p90_ms']:7.1f})  {s['step']}")
        mine = [x for x in txns if x["size"] == size]
        slowest = sorted(mine, key=lambda x: -x["steps"][-1][0] if x["steps"] else 0)[:args.slowest]
        for x in mine[:args.raw] + slowest:
            print(f"\n  one transaction of {size}{' (of the slowest)' if x in slowest else ''}:")
            for ms, what in x["steps"]:
                print(f"  {ms:7.1f}  {what}")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = HERE / "results" / f"txn_timeline_{args.label}{stamp}.json"
    head = json.dumps({k: v for k, v in out.items() if k != "transactions"}, indent=1)[:-2]
    rows = ",\n".join(json.dumps(x, separators=(",", ":")) for x in out["transactions"])   # a line each
    path.write_text(f'{head},\n "transactions": [\n{rows}\n ]\n}}\n')
    print(f"\n{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
