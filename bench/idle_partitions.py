"""Idle cost of many partitions: creation time, CPU while nothing happens, fencing.

    python bench/idle_partitions.py                                  # 10,000 partitions RF 1 on 1 broker, 60 s idle
    python bench/idle_partitions.py --brokers 3 --partitions 9000 --rf 3   # 3,000 replicas... per broker x 3
    python bench/idle_partitions.py --idle-seconds 600               # the 10-minute watch
    python bench/idle_partitions.py --partitions 3000 --profile create   # py-spy on the first broker while creating
    python bench/idle_partitions.py --profile idle                   # ... or while it idles

Starts ``tierlog up --controllers 1 --brokers B`` in a temp dir, creates one
topic of ``--partitions`` partitions and replication factor ``--rf``, and times
CreateTopics until every partition has a leader (the creation time) and until
one acks=1 record went to each partition (the time to serve: brokers apply a
large creation in slices, ``broker/apply_slices.py``).  Then, after
``--settle-seconds``, it watches the idle cluster for ``--idle-seconds``: the
CPU of each broker and of the controller (``/proc/<pid>/stat``), and once a
second the brokers the Metadata answer lists (a fenced broker is left out), so
any fencing shows up as a sample with fewer than B brokers; Metadata answers
slower than 1 s, or failed, are recorded too.  The watcher asks Metadata for a
one-partition topic of its own (``idle-watch``), not for every topic: an
answer listing all 10,000 partitions once a second is itself most of an idle
broker's work (0.33 cores measured that way, more than half of it the answer).

Writes ``results/idle_partitions_<label>.json`` and prints a summary line.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from machine import facts as machine_facts
from partitions import cpu_seconds
from replication import Cluster

CREATE_TIMEOUT_S = 600.0
WATCH_TOPIC = "idle-watch"
POLL_S = 1.0
METADATA_TIMEOUT_S = 10.0     # a Metadata answer slower than this is recorded as failed


def create(bootstrap: str, partitions: int, rf: int) -> float:
    # the answer of one CreateTopics this large can take longer than librdkafka's socket.timeout.ms
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300_000})
    start = time.monotonic()
    fut = admin.create_topics([NewTopic("idle", partitions, rf)], operation_timeout=CREATE_TIMEOUT_S,
                              request_timeout=CREATE_TIMEOUT_S)["idle"]
    fut.result(CREATE_TIMEOUT_S)
    while time.monotonic() - start < CREATE_TIMEOUT_S:
        md = admin.list_topics(topic="idle", timeout=60).topics.get("idle")
        if md and md.error is None and len(md.partitions) == partitions and \
                all(p.leader >= 0 for p in md.partitions.values()):
            return time.monotonic() - start
        time.sleep(POLL_S)
    raise RuntimeError(f"not every partition has a leader after {CREATE_TIMEOUT_S:.0f} s")


def serve(bootstrap: str, partitions: int, started: float) -> float:
    """Seconds from ``started`` until one acks=1 record went to every partition (each broker
    applies a creation in slices, so a partition may be led in the image before it serves)."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 20,
                         "message.timeout.ms": int(CREATE_TIMEOUT_S * 1000)})
    failed = []
    for p in range(partitions):
        producer.produce("idle", b"x", partition=p, on_delivery=lambda err, _m: err and failed.append(err))
        producer.poll(0)
    try:
        if producer.flush(CREATE_TIMEOUT_S) or failed:
            raise RuntimeError(f"not every partition took a record: {failed[:3]}")
        return time.monotonic() - started
    finally:
        producer.close()        # else it keeps reconnecting to the stopped cluster until exit


def watch(bootstrap: str, brokers: int, seconds: float, pids: dict[int, int]) -> dict:
    """CPU per node over ``seconds`` and the samples where the Metadata answer lacked a broker."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    before = {n: cpu_seconds(p) for n, p in pids.items()}
    start, short, samples, slow = time.monotonic(), [], 0, []
    while time.monotonic() - start < seconds:
        asked = time.monotonic()
        try:
            listed = len(admin.list_topics(topic=WATCH_TOPIC, timeout=METADATA_TIMEOUT_S).brokers)
        except KafkaException as exc:
            slow.append({"t_s": round(asked - start, 1), "error": str(exc)})
            continue
        samples += 1
        if time.monotonic() - asked > 1.0:
            slow.append({"t_s": round(asked - start, 1), "metadata_s": round(time.monotonic() - asked, 2)})
        if listed < brokers:
            short.append({"t_s": round(time.monotonic() - start, 1), "brokers_listed": listed})
        time.sleep(POLL_S)
    wall = time.monotonic() - start
    cores = {n: (cpu_seconds(p) - before[n]) / wall for n, p in pids.items()}
    return {"seconds": wall, "cores": cores, "metadata_samples": samples, "samples_missing_a_broker": short,
            "metadata_slow_or_failed": slow}


def _profiled(cluster: Cluster, args, label: str, phase: str, run):
    """``run()``, with py-spy on the first broker when ``--profile`` names ``phase``."""
    if args.profile != phase:
        return run()
    from profile import read_folded, sampling, top_text
    folded = args.out / f"idle_partitions_{label}-{phase}.folded"
    args.out.mkdir(parents=True, exist_ok=True)
    broker = next(info["pid"] for info in cluster.nodes.values() if "broker" in info["roles"])
    with sampling(broker, folded):
        result = run()
    print(top_text(read_folded(folded), {}), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--brokers", type=int, default=1)
    p.add_argument("--partitions", type=int, default=10_000)
    p.add_argument("--rf", type=int, default=1)
    p.add_argument("--settle-seconds", type=float, default=20.0)
    p.add_argument("--idle-seconds", type=float, default=60.0)
    p.add_argument("--profile", choices=("create", "idle"), default=None,
                   help="py-spy the first broker while creating or while idle "
                        "(results/idle_partitions_<label>-<phase>.folded)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="keep the cluster's files here (default: a temp dir, removed after)")
    p.add_argument("--label", default=None)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    label = args.label or f"{args.partitions}x{args.rf}-on-{args.brokers}"
    doc = {"brokers": args.brokers, "partitions": args.partitions, "rf": args.rf,
           "machine_before": machine_facts()}
    with contextlib.ExitStack() as stack:
        tmp = args.data_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tierlog-bench-idle-")))
        tmp.mkdir(parents=True, exist_ok=True)
        cluster = Cluster(tmp, brokers=args.brokers, controllers=1)
        try:
            pids = {n: info["pid"] for n, info in cluster.nodes.items()}
            watcher = AdminClient({"bootstrap.servers": cluster.bootstrap})
            watcher.create_topics([NewTopic(WATCH_TOPIC, 1, 1)])[WATCH_TOPIC].result(CREATE_TIMEOUT_S)
            started = time.monotonic()
            doc["create_s"] = _profiled(cluster, args, label, "create",
                                        lambda: create(cluster.bootstrap, args.partitions, args.rf))
            doc["serve_s"] = serve(cluster.bootstrap, args.partitions, started)
            print(f"created {args.partitions} partitions RF {args.rf} in {doc['create_s']:.1f} s, a record "
                  f"written to each after {doc['serve_s']:.1f} s", flush=True)
            time.sleep(args.settle_seconds)
            doc["idle"] = _profiled(cluster, args, label, "idle",
                                    lambda: watch(cluster.bootstrap, args.brokers, args.idle_seconds, pids))
        finally:
            cluster.stop()
    doc["roles"] = {n: info["roles"] for n, info in cluster.nodes.items()}
    idle = doc["idle"]
    per_broker = [c for n, c in idle["cores"].items() if "broker" in doc["roles"][n]]
    print(f"idle over {idle['seconds']:.0f} s: brokers {', '.join(f'{c:.3f}' for c in per_broker)} cores; "
          f"{len(idle['samples_missing_a_broker'])} of {idle['metadata_samples']} Metadata samples missed a broker, "
          f"{len(idle['metadata_slow_or_failed'])} took over 1 s or failed",
          flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"idle_partitions_{label}.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
