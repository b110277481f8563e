"""Consumer groups on ``tierlog up`` (3 brokers, 1 controller): issue 11's performance goals.

    python bench/groups.py                 # all three parts, a few minutes
    python bench/groups.py --parts commits --commit-seconds 5

1. **commits**: ``--committers`` (10) consumers, each its own process, ``assign()`` one
   partition of a topic and commit a new offset for it in a tight loop for ``--commit-seconds``,
   all in one group (so one coordinator serves them all: the hard case), once with synchronous
   commits (one in flight per consumer) and once asynchronous (up to ``--async-window`` in
   flight per consumer).  Counted: commits the coordinator acknowledged without error inside
   the common window.  Goal: >= 20,000 commits/s in total.
2. **settle**: ``--members`` (50) consumers ``subscribe()`` one topic (2 partitions per member),
   threads in one client process.  Once every member holds its share and nothing changed for
   ``QUIET_S``, one member leaves (``close()``, a LeaveGroup); settle time = from the start of
   that close until the remaining members' assignments cover every partition exactly once
   again, as seen in their rebalance callbacks.  Run per protocol: classic eager (``range``),
   classic cooperative (``cooperative-sticky``) and KIP-848 (``group.protocol=consumer``).
   Goal: <= 2 x group.initial.rebalance.delay.ms + max.poll.interval.ms (both defaults).
3. **consume**: one consumer reads a ``--consume-mib`` topic of 12 partitions once by ``assign()``
   and once through a group (``subscribe()``, auto commit on, a new group each time), taking
   turns ``--repeat`` times.  Throughput from the first record to the last; the group's join
   time (subscribe() to first record) reported apart; ``fetch.queue.backoff.ms`` 10 in both modes.  Goal: <= 10 % loss.

Writes ``results/groups_<timestamp>.json``, ``results/groups_latest.json`` and ``results/groups.png``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from confluent_kafka import Consumer, KafkaException, TopicPartition

MIB = 1 << 20
DEFAULT_INITIAL_DELAY_MS = 3000          # group.initial.rebalance.delay.ms, tierlog's and Kafka's default
DEFAULT_MAX_POLL_INTERVAL_MS = 300_000   # librdkafka's max.poll.interval.ms (its rebalance timeout)
COMMIT_GOAL_PER_S = 20_000
CONSUME_LOSS_GOAL = 0.10
QUIET_S = 3.0
FORM_TIMEOUT_S = 180.0
READY_TIMEOUT_S = 300.0                          # 100 committer processes starting on a loaded 2-core machine
PROFILE_HZ = 100                                 # py-spy's rate on the coordinator (--profile)
GO_DELAY_S = 1.0                                 # the common window opens this long after the last is ready
# librdkafka pauses a broker's fetches for fetch.queue.backoff.ms (default 1000) when its local queue is
# full (queued.max.messages.kbytes), a race between its fetcher and the Python loop that added a whole
# second to some runs of either mode; both modes use the same short backoff
FETCH_QUEUE_BACKOFF_MS = 10
PROTOCOLS = {"classic-eager": {"partition.assignment.strategy": "range"},
             "classic-cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
             "consumer (KIP-848)": {"group.protocol": "consumer"}}


# -- workers (child processes) -------------------------------------------------------------

def worker_commit(args) -> dict:
    """Commit offsets 1, 2, 3, ... for one partition for ``seconds`` from the start time the parent
    writes on stdin once every committer printed "ready" (so slow start-ups do not eat the window)."""
    done = {"ok": 0, "errors": 0, "first_error": None, "inflight": 0}

    def on_commit(err, _parts):
        done["inflight"] -= 1
        if err is not None:
            done["errors"] += 1
            done["first_error"] = done["first_error"] or str(err)
        elif time.time() <= end:
            done["ok"] += 1

    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False}
    if args.mode == "async":
        conf["on_commit"] = on_commit
    consumer = Consumer(conf)
    tp = TopicPartition(args.topic, args.partition)
    consumer.assign([tp])
    consumer.committed([tp], timeout=30)              # finds the coordinator before the clock starts
    print("ready", flush=True)
    start_at = float(sys.stdin.readline())
    end = start_at + args.seconds
    time.sleep(max(0.0, start_at - time.time()))
    offset, latencies = 0, []
    while time.time() < end:
        offset += 1
        if args.mode == "sync":
            t = time.perf_counter()
            try:
                consumer.commit(offsets=[TopicPartition(args.topic, args.partition, offset)], asynchronous=False)
                if time.time() <= end:
                    done["ok"] += 1
                    latencies.append(time.perf_counter() - t)
            except KafkaException as e:
                done["errors"] += 1
                done["first_error"] = done["first_error"] or str(e)
        else:
            while done["inflight"] >= args.window:
                consumer.poll(0.005)                  # serves commit callbacks (100 processes: no busy loop)
            done["inflight"] += 1
            consumer.commit(offsets=[TopicPartition(args.topic, args.partition, offset)], asynchronous=True)
            consumer.poll(0)
    drain_until = time.time() + 30
    while done["inflight"] > 0 and time.time() < drain_until:
        consumer.poll(0.01)
    last = consumer.committed([tp], timeout=30)[0].offset
    consumer.close()
    return {"partition": args.partition, "ok": done["ok"], "errors": done["errors"],
            "first_error": done["first_error"], "last_committed": last, "attempted": offset,
            "latencies_ms": [round(1000 * x, 3) for x in latencies]}


class _Member:
    """One subscribed consumer on a thread of its own; its current assignment from its callbacks."""

    def __init__(self, index: int, conf: dict, topic: str, changed: threading.Event):
        self.index, self.owned, self.changes = index, set(), 0
        self.stop, self.closed_at, self.changed = threading.Event(), None, changed
        self.consumer = Consumer({**conf, "client.id": f"member-{index}"})
        self.incremental = (conf.get("partition.assignment.strategy") == "cooperative-sticky"
                            or conf.get("group.protocol") == "consumer")
        self.lock = threading.Lock()
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _incremental(self) -> bool:
        """Cooperative and KIP-848 callbacks carry the partitions added or taken; eager ones the whole set."""
        return self.incremental

    def _on_assign(self, _c, parts):
        with self.lock:
            new = {p.partition for p in parts}
            self.owned = self.owned | new if self._incremental() else new
            self.changes += 1
        self.changed.set()

    def _on_revoke(self, _c, parts):
        with self.lock:
            self.owned = self.owned - {p.partition for p in parts} if self._incremental() else set()
            self.changes += 1
        self.changed.set()

    def _run(self):
        while not self.stop.is_set():
            self.consumer.poll(0.1)
        self.closed_at = time.time()
        self.consumer.close()

    def snapshot(self) -> set[int]:
        with self.lock:
            return set(self.owned)


def _covers(members: list[_Member], partitions: int) -> bool:
    seen: list[int] = []
    for m in members:
        seen += m.snapshot()
    return len(seen) == partitions and set(seen) == set(range(partitions))


def worker_settle(args) -> dict:
    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
            **json.loads(args.conf)}
    changed = threading.Event()
    t_subscribe = time.time()
    members = [_Member(i, conf, args.topic, changed) for i in range(args.members)]
    deadline = time.time() + FORM_TIMEOUT_S
    formed_at = None
    while time.time() < deadline:                      # formed: full cover, all members hold some, quiet
        changed.clear()
        if _covers(members, args.partitions) and all(m.snapshot() for m in members):
            formed_at = formed_at or time.time()
            if not changed.wait(QUIET_S):
                break
            formed_at = None
        else:
            changed.wait(0.05)
    else:
        return {"failed": "group did not form", "owned": [len(m.snapshot()) for m in members]}
    leaver, rest = members[0], members[1:]
    changes_before = sum(m.changes for m in rest)
    t_leave = time.time()
    leaver.stop.set()
    settle_deadline = t_leave + args.settle_timeout
    settled_at = None
    while time.time() < settle_deadline:               # settled: rest cover every partition after a change
        if sum(m.changes for m in rest) > changes_before and _covers(rest, args.partitions):
            settled_at = time.time()
            break
        changed.wait(0.01)
        changed.clear()
    leaver.thread.join(30)
    for m in rest:
        m.stop.set()
    for m in rest:
        m.thread.join(30)
    return {"members": args.members, "partitions": args.partitions,
            "formed_s": formed_at and formed_at - t_subscribe,
            "settle_s": settled_at and settled_at - t_leave,
            "leaver_close_s": leaver.closed_at and leaver.closed_at - t_leave,
            "failed": None if settled_at else "no full cover within the settle timeout"}


def worker_consume(args) -> dict:
    conf = {"bootstrap.servers": args.bootstrap, "auto.offset.reset": "earliest", "group.id": args.group,
            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS}
    if args.mode == "assign":
        conf["enable.auto.commit"] = False
    consumer = Consumer(conf)
    md = consumer.list_topics(topic=args.topic, timeout=10).topics[args.topic]
    expected = sum(consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=10)[1]
                   for p in md.partitions)
    count = nbytes = 0
    start = time.perf_counter()
    if args.mode == "assign":
        consumer.assign([TopicPartition(args.topic, p, 0) for p in md.partitions])
    else:
        consumer.subscribe([args.topic])
    first = last = None
    stall = time.perf_counter() + 60
    while count < expected and time.perf_counter() < stall:
        for msg in consumer.consume(10_000, timeout=1.0):
            if msg.error() is None:
                first = first or time.perf_counter()
                count, nbytes = count + 1, nbytes + len(msg.value())
                last = time.perf_counter()
                stall = last + 60
    consumer.close()
    return {"mode": args.mode, "records": count, "expected": expected, "mib": nbytes / MIB,
            "to_first_record_s": first and first - start, "first_to_last_s": last and last - first,
            "mib_per_s": last and nbytes / MIB / (last - first), "complete": count >= expected,
            "mib_per_s_incl_start": last and nbytes / MIB / (last - start)}


# -- driver -------------------------------------------------------------------------------

def _worker(argv: list[str], timeout: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(Path(__file__)), *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _go(procs: list[subprocess.Popen]) -> float:
    """Wait until every committer printed "ready", then give them all one start time."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    for p in procs:
        if p.stdout.readline().strip() != "ready" or time.monotonic() > deadline:
            raise RuntimeError(f"a committer did not start: {p.stderr.read()[-2000:]}")
    start_at = time.time() + GO_DELAY_S
    for p in procs:
        p.stdin.write(f"{start_at}\n")
        p.stdin.flush()
    return start_at


def _result(proc: subprocess.Popen, timeout: float) -> dict:
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        return {"failed": err[-2000:]}
    return json.loads(out.strip().splitlines()[-1])


def _coordinator(cluster, group: str) -> tuple[int, int]:
    """(node id, partition) of the broker leading ``group``'s ``__consumer_offsets`` partition (its coordinator)."""
    from confluent_kafka.admin import AdminClient

    from tierlog.group import coordinator_partition
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    deadline = time.monotonic() + FORM_TIMEOUT_S
    while time.monotonic() < deadline:
        topic = admin.list_topics("__consumer_offsets", timeout=30).topics.get("__consumer_offsets")
        if topic is not None and topic.error is None and topic.partitions:
            index = coordinator_partition(group, len(topic.partitions))
            if topic.partitions[index].leader in cluster.nodes:
                return topic.partitions[index].leader, index
        time.sleep(0.2)
    raise RuntimeError("__consumer_offsets has no leader for the group")


def _log_batches(cluster, node: int, index: int) -> tuple[int, int]:
    """(batches, records) in the coordinator's ``__consumer_offsets-<index>`` log so far."""
    from tierlog.records import iter_batches
    batches = records = 0
    for segment in sorted((cluster.node_dir(node) / "data" / f"__consumer_offsets-{index}").glob("*.log")):
        for _, header in iter_batches(segment.read_bytes(), partial_ok=True):
            batches += 1
            records += header.records_count
    return batches, records


def _percentiles(latencies: list[float]) -> dict | None:
    lat = sorted(latencies)
    return lat and {"p50": lat[len(lat) // 2], "p99": lat[int(len(lat) * 0.99)]}


def _py_spy(pid: int, out: Path) -> subprocess.Popen:
    """py-spy on ``pid`` at PROFILE_HZ without pausing it (--nonblocking), raw folded stacks to ``out``."""
    from profile import py_spy
    return subprocess.Popen([py_spy(), "record", "--nonblocking", "--pid", str(pid), "--format", "raw",
                             "--rate", str(PROFILE_HZ), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _profile_top(folded: Path) -> str:
    from profile import SAMPLE_HZ, read_folded, top_text
    if not folded.exists():
        return "(no samples)"
    return top_text(read_folded(folded), {}).replace(f"at {SAMPLE_HZ} Hz", f"at {PROFILE_HZ} Hz", 1)


def commit_run(cluster, args, topic: str, mode: str) -> dict:
    """One mode: ``--committers`` worker processes commit in a common window; the brokers' CPU over
    that window, and with ``--profile`` py-spy on the group's coordinator."""
    from partitions import _stop_profile, cpu_seconds
    group = f"bench-commits-{mode}-{args.committers}"
    procs = [_worker(["commit-worker", "--bootstrap", cluster.bootstrap, "--group", group,
                      "--topic", topic, "--partition", str(i), "--mode", mode, "--window", str(args.async_window),
                      "--seconds", str(args.commit_seconds)], 0)
             for i in range(args.committers)]
    brokers = {n: info["pid"] for n, info in cluster.nodes.items() if "broker" in info["roles"]}
    node, index = _coordinator(cluster, group)
    coordinator = cluster.nodes[node]["pid"]
    start_at = _go(procs)
    batches_before = _log_batches(cluster, node, index)
    time.sleep(max(0.0, start_at - time.time()))
    folded = args.out / f"groups_commits_{mode}_{args.committers}.folded"
    spy = _py_spy(coordinator, folded) if args.profile else None
    before = {n: cpu_seconds(p) for n, p in brokers.items()}
    clients_before = sum(cpu_seconds(p.pid) for p in procs)
    time.sleep(args.commit_seconds)
    cpu = {n: cpu_seconds(p) - before[n] for n, p in brokers.items()}
    clients_cpu = sum(cpu_seconds(p.pid) for p in procs) - clients_before
    if spy is not None:
        _stop_profile(spy)
    workers = [_result(p, args.commit_seconds + 120) for p in procs]
    batches, records = (a - b for a, b in zip(_log_batches(cluster, node, index), batches_before, strict=True))
    ok = sum(w.get("ok", 0) for w in workers)
    latencies = [x for w in workers for x in w.pop("latencies_ms", [])]
    run = {"mode": mode, "committers": args.committers, "seconds": args.commit_seconds, "commits": ok,
           "commits_per_s": ok / args.commit_seconds, "errors": sum(w.get("errors", 0) for w in workers),
           "latency_ms": _percentiles(latencies), "broker_cpu_s": cpu,
           "coordinator_pid": coordinator, "cpu_s_per_1k_commits": 1000 * sum(cpu.values()) / max(ok, 1),
           "client_cpu_s": clients_cpu, "offsets_batches": batches, "offsets_records": records,
           "loadavg_after": os.getloadavg(), "goal_met": ok / args.commit_seconds >= COMMIT_GOAL_PER_S,
           "workers": workers}
    lat = run["latency_ms"] or {}
    print(f"commits {mode} x{args.committers}: {run['commits_per_s']:,.0f}/s, errors {run['errors']}, "
          f"p50 {lat.get('p50', float('nan')):.1f} ms p99 {lat.get('p99', float('nan')):.1f} ms, "
          f"{run['cpu_s_per_1k_commits']:.2f} broker CPU-s per 1k commits "
          f"(per broker {', '.join(f'{n}: {c:.1f}' for n, c in sorted(cpu.items()))}; "
          f"committers {clients_cpu:.1f} CPU-s), {records / max(batches, 1):.1f} records per "
          f"__consumer_offsets batch, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    if spy is not None:
        run["profile_top"] = _profile_top(folded)
        print(run["profile_top"], flush=True)
    return run


def part_commits(cluster, args) -> list[dict]:
    from workload import ensure_topic
    topic = "bench-commits"
    ensure_topic(cluster.bootstrap, topic, args.committers, 3)
    args.out.mkdir(parents=True, exist_ok=True)
    return [commit_run(cluster, args, topic, mode) for mode in args.modes.split(",")]


def part_settle(bootstrap: str, args) -> list[dict]:
    from workload import ensure_topic
    topic, partitions = "bench-settle", 2 * args.members
    ensure_topic(bootstrap, topic, partitions, 3)
    goal_s = (2 * DEFAULT_INITIAL_DELAY_MS + DEFAULT_MAX_POLL_INTERVAL_MS) / 1000
    runs = []
    for name, conf in PROTOCOLS.items():
        if args.protocols and name.split()[0] not in args.protocols:
            continue
        proc = _worker(["settle-worker", "--bootstrap", bootstrap, "--group", f"bench-settle-{name.split()[0]}",
                        "--topic", topic, "--partitions", str(partitions), "--members", str(args.members),
                        "--conf", json.dumps(conf), "--settle-timeout", str(goal_s + 30)], 0)
        run = {"protocol": name, "client_config": conf, **_result(proc, FORM_TIMEOUT_S + goal_s + 120),
               "goal_s": goal_s}
        run["goal_met"] = bool(run.get("settle_s") is not None and run["settle_s"] <= goal_s)
        print(f"settle {name}: formed {run.get('formed_s')}, settle {run.get('settle_s')} s "
              f"(goal {goal_s} s) {run.get('failed') or ''}", flush=True)
        runs.append(run)
    return runs


def part_consume(bootstrap: str, args) -> dict:
    topic = "bench-consume"
    records = int(args.consume_mib * MIB / 1024)
    fill = subprocess.run([sys.executable, str(HERE / "workload.py"), "produce", "--bootstrap", bootstrap,
                           "--topic", topic, "--records", str(records), "--partitions", "12",
                           "--replication-factor", "3", "--acks", "1", "--create"],
                          capture_output=True, text=True, check=False)
    if fill.returncode:
        return {"failed": fill.stderr[-2000:]}
    runs = []
    for i in range(args.repeat):
        for mode in ("assign", "subscribe"):
            proc = _worker(["consume-worker", "--bootstrap", bootstrap, "--topic", topic, "--mode", mode,
                            "--group", f"bench-consume-{mode}-{i}"], 0)
            run = _result(proc, 600)
            print(f"consume {mode}: {run.get('mib_per_s') or run}", flush=True)
            runs.append(run)
    med = {m: statistics.median(r["mib_per_s"] for r in runs if r.get("mode") == m and r.get("mib_per_s"))
           for m in ("assign", "subscribe")}
    loss = 1 - med["subscribe"] / med["assign"]
    return {"mib": args.consume_mib, "partitions": 12, "runs": runs, "median_mib_per_s": med,
            "loss": loss, "goal_met": loss <= CONSUME_LOSS_GOAL,
            "median_join_s": statistics.median(r["to_first_record_s"] for r in runs if r.get("mode") == "subscribe")}


def plot(doc: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    ax = axes[0]
    runs = doc.get("commits", [])
    ax.bar([r["mode"] for r in runs], [r["commits_per_s"] for r in runs])
    ax.axhline(COMMIT_GOAL_PER_S, color="red", linestyle="--", label="goal")
    ax.set(title=f"offset commits/s, {runs[0]['committers'] if runs else 10} consumers, one group",
           ylabel="commits/s")
    ax.legend()
    ax = axes[1]
    runs = [r for r in doc.get("settle", []) if r.get("settle_s") is not None]
    ax.bar([r["protocol"] for r in runs], [r["settle_s"] for r in runs])
    ax.set(title=f"50 members: settle after one leaves (goal {doc['settle_goal_s']:.0f} s)", ylabel="s")
    ax.tick_params(axis="x", labelsize=7)
    ax = axes[2]
    c = doc.get("consume") or {}
    for mode in ("assign", "subscribe"):
        ax.plot([r["mib_per_s"] for r in c.get("runs", []) if r.get("mode") == mode], marker="o", label=mode)
    ax.set(title="one consumer, 12 partitions", xlabel="repeat", ylabel="MiB/s (first to last record)")
    ax.legend()
    fig.suptitle("tierlog up: 3 brokers, consumer groups (librdkafka)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd")
    w = sub.add_parser("commit-worker")
    for s in (w, sub.add_parser("settle-worker"), sub.add_parser("consume-worker")):
        s.add_argument("--bootstrap", required=True)
        s.add_argument("--topic", required=True)
        s.add_argument("--group", required=True)
    w.add_argument("--partition", type=int, required=True)
    w.add_argument("--mode", choices=("sync", "async"), required=True)
    w.add_argument("--window", type=int, default=100)
    w.add_argument("--seconds", type=float, required=True)
    s = sub.choices["settle-worker"]
    s.add_argument("--partitions", type=int, required=True)
    s.add_argument("--members", type=int, required=True)
    s.add_argument("--conf", default="{}")
    s.add_argument("--settle-timeout", type=float, required=True)
    sub.choices["consume-worker"].add_argument("--mode", choices=("assign", "subscribe"), required=True)
    p.add_argument("--parts", default="commits,settle,consume")
    p.add_argument("--committers", type=int, default=10)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting for every node")
    p.add_argument("--commit-seconds", type=float, default=10.0)
    p.add_argument("--async-window", type=int, default=100)
    p.add_argument("--modes", default="sync,async", help="commit modes to run: sync, async or both")
    p.add_argument("--profile", action="store_true",
                   help="py-spy the coordinator broker during each commit window "
                        "(results/groups_commits_<mode>_<committers>.folded)")
    p.add_argument("--members", type=int, default=50)
    p.add_argument("--protocols", default="", help="e.g. classic-eager,consumer (default: all)")
    p.add_argument("--consume-mib", type=float, default=200.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", type=Path, default=HERE / "results")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd:
        run = {"commit-worker": worker_commit, "settle-worker": worker_settle, "consume-worker": worker_consume}
        print(json.dumps(run[args.cmd](args)), flush=True)
        return 0
    from machine import facts as machine_facts
    from replication import Cluster
    args.protocols = [x for x in args.protocols.split(",") if x]
    parts = args.parts.split(",")
    doc = {"workload": "tierlog up: 1 controller, 3 brokers; librdkafka consumers; defaults of "
                       "group.initial.rebalance.delay.ms (3000) and max.poll.interval.ms (300000)",
           "settle_goal_s": (2 * DEFAULT_INITIAL_DELAY_MS + DEFAULT_MAX_POLL_INTERVAL_MS) / 1000,
           "commit_goal_per_s": COMMIT_GOAL_PER_S, "machine_before": machine_facts()}
    with tempfile.TemporaryDirectory(prefix="tierlog-bench-groups-") as tmp:
        settings = dict(kv.split("=", 1) for kv in args.set)
        doc["settings"] = settings
        cluster = Cluster(Path(tmp), brokers=3, controllers=1, settings=settings)
        try:
            if "commits" in parts:
                doc["commits"] = part_commits(cluster, args)
            if "settle" in parts:
                doc["settle"] = part_settle(cluster.bootstrap, args)
            if "consume" in parts:
                doc["consume"] = part_consume(cluster.bootstrap, args)
        finally:
            cluster.stop()
    doc["machine_after"] = machine_facts()
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"groups_{stamp}.json", "groups_latest.json"):
        (args.out / name).write_text(json.dumps(doc, indent=1))
    plot(doc, args.out / "groups.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
