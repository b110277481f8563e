"""read_committed vs read_uncommitted reads of a transactional topic, in one run.

    .venv/bin/python bench/read_committed.py                 # 256 MiB, 4 partitions
    .venv/bin/python bench/read_committed.py --size-mib 64   # quicker

One tierlog node started here; a topic of 1 KiB values written by one confluent-kafka
transactional producer, ``--per-txn`` records per transaction (spread over the
partitions), every ``--abort-every``-th transaction aborted. Then, in the same run,
each reader reads every partition to its end once to warm up, then at both isolation levels:
tierlog's own Fetch client (what each Spark task runs: whole batches into Arrow,
aborted batches dropped with ``records.aborted``) and one confluent-kafka consumer.
MiB/s counts the value bytes each level delivers over the time it took; the ratio
compares records delivered per second (read_committed delivers fewer: the
aborted ones are left out). Results: ``bench/results/read_committed_<timestamp>.json``
and ``read_committed_latest.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # bench/profile.py shadows profile
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))
sys.path.insert(0, str(HERE))

from nodeproc import NodeProcess
from spark_read import RECORD, write_results

TOPIC = "bench-txn"
LEVELS = ("read_uncommitted", "read_committed")


def fill(bootstrap: str, partitions: int, n: int, per_txn: int, abort_every: int) -> tuple[float, int]:
    """Transactions of ``per_txn`` records; the seconds taken and the records committed."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})          # kept until the topic exists
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "bench-txn", "linger.ms": 5,
                  "batch.size": 1_000_000, "queue.buffering.max.kbytes": 512 * 1024})
    p.init_transactions(60)
    value = os.urandom(RECORD)
    committed, t = 0, time.perf_counter()
    for txn, first in enumerate(range(0, n, per_txn)):
        count = min(per_txn, n - first)
        p.begin_transaction()
        for i in range(count):
            while True:
                try:
                    p.produce(TOPIC, value, partition=(first + i) % partitions)
                    break
                except BufferError:
                    p.poll(0.01)
        if txn % abort_every == abort_every - 1:
            assert p.flush(60) == 0
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
            committed += count
    return time.perf_counter() - t, committed


def client_read(bootstrap: str, level: str) -> tuple[float, int]:
    from tierlog.client import (
        LATEST,
        READ_COMMITTED,
        READ_UNCOMMITTED,
        Cluster,
        read_range,
    )

    cluster = Cluster(bootstrap, isolation_level=READ_COMMITTED if level == "read_committed" else READ_UNCOMMITTED)
    rows, t = 0, time.perf_counter()
    tps = cluster.partitions_of([TOPIC])
    ends = cluster.list_offsets(tps, LATEST)
    for tp in tps:
        for batch in read_range(cluster, tp[0], tp[1], 0, ends[tp]):
            rows += batch.num_rows
    dt = time.perf_counter() - t
    cluster.close()
    return dt, rows


def consumer_read(bootstrap: str, partitions: int, level: str) -> tuple[float, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "isolation.level": level, "enable.partition.eof": True,
                  "fetch.max.bytes": 64 * 1024 * 1024, "max.partition.fetch.bytes": 8 * 1024 * 1024})
    c.assign([TopicPartition(TOPIC, p, -2) for p in range(partitions)])
    seen, at_end, t = 0, set(), time.perf_counter()
    while len(at_end) < partitions:
        for m in c.consume(num_messages=10000, timeout=1.0):
            if m.error() is None:
                seen += 1
            else:
                at_end.add(m.partition())
    dt = time.perf_counter() - t
    c.close()
    return dt, seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--per-txn", type=int, default=100, help="records per transaction")
    ap.add_argument("--abort-every", type=int, default=10, help="abort every Nth transaction")
    args = ap.parse_args()
    n = args.size_mib * 1024 * 1024 // RECORD
    node = NodeProcess(Path(tempfile.mkdtemp(prefix="bench-txn-")) / "node-1").start()
    out: dict = {"size_mib": n * RECORD / 2**20, "records": n, "per_txn": args.per_txn,
                 "abort_every": args.abort_every, "load_avg_start": os.getloadavg()}
    try:
        out["fill_s"], committed = fill(node.bootstrap, args.partitions, n, args.per_txn, args.abort_every)
        print(f"filled {n} records ({committed} committed) in {out['fill_s']:.1f} s")
        for name, read in (("tierlog_client", lambda lvl: client_read(node.bootstrap, lvl)),
                           ("confluent_consumer", lambda lvl: consumer_read(node.bootstrap, args.partitions, lvl))):
            read("read_uncommitted")                    # warm-up: imports, page cache, connections
            for level in LEVELS:
                dt, rows = read(level)
                assert rows == (committed if level == "read_committed" else n), (name, level, rows)
                out[f"{name}_{level}"] = {"seconds": dt, "records": rows, "mib_s": rows * RECORD / 2**20 / dt,
                                          "records_s": rows / dt}
                print(f"{name} {level}: {rows * RECORD / 2**20 / dt:.0f} MiB/s ({rows / dt:.0f} records/s)")
            out[f"{name}_ratio_records_s"] = (out[f"{name}_read_committed"]["records_s"]
                                              / out[f"{name}_read_uncommitted"]["records_s"])
    finally:
        node.stop()
    out["load_avg_end"] = os.getloadavg()
    write_results("read_committed", out)


if __name__ == "__main__":
    main()
