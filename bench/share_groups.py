"""Share groups (KIP-932) on ``tierlog up`` (3 brokers, 1 controller): issue 37's performance figures.

    python bench/share_groups.py                   # a few minutes
    python bench/share_groups.py --mib 30 --members 1,4

1. **consume**: a ``--mib`` topic of 12 partitions (1 KiB records, replication factor 3) read to
   the end by a share group of 1, 4 and 16 members (confluent-kafka ``ShareConsumer``, implicit
   mode: each poll's batch is accepted by the next poll, one acknowledgement per batch) and by a
   classic consumer group of 1 and 4 members (``subscribe()``, auto commit), each member a thread
   of one client process, a new group each time.  MiB/s from the first record to the last one of
   the topic seen by any member; records delivered more than once are counted.
   Goal (issue 37): share at 16 members >= 0.5x the classic group.
2. **redelivery**: on a 1-partition topic (two members share it: the ``simple`` assignor gives a
   partition to several members only when there are more members than partitions; on the
   12-partition topic a dead member's partitions reach the others only once its group session
   times out, group.share.session.timeout.ms), a member (its own process) takes records and is
   killed -9; the time from the kill until the other member receives one of the records it held.
   Expected: the group's acquisition lock (``--lock-ms``, share.record.lock.duration.ms) plus at
   most one fetch's wait.

Writes ``results/share_groups_<timestamp>.json`` and ``results/share_groups_latest.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from confluent_kafka import Consumer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

MIB = 1 << 20
PARTITIONS = 12
CONSUME_TIMEOUT_S = 600.0
SHARE_GOAL = 0.5


def alter_group(bootstrap: str, group: str, values: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
    admin.incremental_alter_configs([res])[res].result(timeout=30)


def consume_run(bootstrap: str, topic: str, kind: str, members: int, records: int, group: str) -> dict:
    """One group of ``members`` threads reading ``topic`` to its end: MiB/s and duplicates."""
    if kind == "share":
        alter_group(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    seen: set[tuple[int, int]] = set()
    lock = threading.Lock()
    state = {"first": None, "last": None, "delivered": 0}
    stop = threading.Event()

    def member() -> None:
        if kind == "share":
            c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        else:
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                          "fetch.queue.backoff.ms": 10})
        c.subscribe([topic])
        try:
            while not stop.is_set():
                batch = c.poll(0.5) if kind == "share" else c.consume(500, 0.5)
                got = [(m.partition(), m.offset()) for m in batch if m.error() is None]
                if not got:
                    continue
                now = time.monotonic()
                with lock:
                    state["first"] = state["first"] or now
                    state["delivered"] += len(got)
                    seen.update(got)
                    if len(seen) >= records:
                        state["last"] = now
                        stop.set()
        finally:
            c.close()

    threads = [threading.Thread(target=member, daemon=True) for _ in range(members)]
    for t in threads:
        t.start()
    stop.wait(CONSUME_TIMEOUT_S)
    stop.set()
    for t in threads:
        t.join(60)
    if state["last"] is None:
        return {"kind": kind, "members": members, "failed": f"{len(seen)} of {records} records in time"}
    seconds = state["last"] - state["first"]
    return {"kind": kind, "members": members, "records": records, "seconds": round(seconds, 3),
            "mib_per_s": round(records * 1024 / MIB / seconds, 1), "delivered_again": state["delivered"] - len(seen)}


_VICTIM = """
import sys
from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "share.acknowledgement.mode": "explicit"})
c.subscribe([sys.argv[3]])
while True:
    batch = [m for m in c.poll(0.5) if m.error() is None]
    if batch:
        print(" ".join(f"{m.partition()}:{m.offset()}" for m in batch), flush=True)
        sys.stdin.readline()                    # hold them, acknowledging nothing, until killed
"""


def redelivery_run(bootstrap: str, topic: str, lock_ms: int) -> dict:
    group = f"bench-redeliver-{int(time.time())}"
    alter_group(bootstrap, group, {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(lock_ms)})
    victim = subprocess.Popen([sys.executable, "-c", _VICTIM, bootstrap, group, topic], stdout=subprocess.PIPE,
                              stdin=subprocess.PIPE, text=True)
    held = {tuple(int(x) for x in item.split(":")) for item in victim.stdout.readline().split()}
    survivor = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    survivor.subscribe([topic])
    from confluent_kafka import AcknowledgeType
    for _ in range(5):                          # join the group first: its own records are released at once
        for m in survivor.poll(0.5):
            survivor.acknowledge(m, AcknowledgeType.RELEASE)
    os.kill(victim.pid, signal.SIGKILL)
    killed = time.monotonic()
    victim.wait()
    again = None
    while again is None and time.monotonic() - killed < 120:
        for m in survivor.poll(0.2):
            if (m.partition(), m.offset()) in held and again is None:
                again = time.monotonic() - killed
            survivor.acknowledge(m, AcknowledgeType.RELEASE)
    survivor.close()
    return {"lock_ms": lock_ms, "held": len(held), "redelivered_after_s": None if again is None else round(again, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=float, default=60.0, help="topic size (1 KiB records)")
    p.add_argument("--members", default="1,4,16", help="share group sizes")
    p.add_argument("--classic-members", default="1,4", help="classic group sizes")
    p.add_argument("--lock-ms", type=int, default=5000, help="the redelivery run's acquisition lock")
    p.add_argument("--redelivery-only", action="store_true", help="skip the consume runs")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    from machine import facts as machine_facts
    from replication import Cluster
    records = int(args.mib * MIB / 1024)
    doc: dict = {"workload": f"tierlog up: 1 controller, 3 brokers; {args.mib:g} MiB, {PARTITIONS} partitions, RF 3, "
                             "1 KiB records; members as threads of one client process", "machine_before": machine_facts()}
    with tempfile.TemporaryDirectory(prefix="tierlog-bench-share-") as tmp:
        cluster = Cluster(Path(tmp), brokers=3, controllers=1,
                          settings={"group.share.min.record.lock.duration.ms": "1000"})
        try:
            topic = "bench-share"
            fill = subprocess.run([sys.executable, str(HERE / "workload.py"), "produce", "--bootstrap",
                                   cluster.bootstrap, "--topic", topic, "--records", str(records), "--partitions",
                                   str(PARTITIONS), "--replication-factor", "3", "--acks", "1", "--create"],
                                  capture_output=True, text=True, check=False)
            if fill.returncode:
                raise RuntimeError(fill.stderr[-2000:])
            runs = []
            plan = [] if args.redelivery_only else [("classic", int(n)) for n in args.classic_members.split(",") if n] + \
                [("share", int(n)) for n in args.members.split(",") if n]
            for i, (kind, members) in enumerate(plan):
                run = consume_run(cluster.bootstrap, topic, kind, members, records, f"bench-{kind}-{members}-{i}")
                print(json.dumps(run), flush=True)
                runs.append(run)
            doc["consume"] = runs
            one = "bench-share-one"
            subprocess.run([sys.executable, str(HERE / "workload.py"), "produce", "--bootstrap", cluster.bootstrap,
                            "--topic", one, "--records", "5000", "--partitions", "1", "--replication-factor", "3",
                            "--acks", "1", "--create"], capture_output=True, text=True, check=True)
            doc["redelivery"] = redelivery_run(cluster.bootstrap, one, args.lock_ms)
            print(json.dumps(doc["redelivery"]), flush=True)
        finally:
            cluster.stop()
    doc["machine_after"] = machine_facts()
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"share_groups_{stamp}.json", "share_groups_latest.json"):
        (args.out / name).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
