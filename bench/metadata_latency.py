"""Metadata propagation on an idle ``tierlog up``: how fast an admin change reaches every broker.

    python bench/metadata_latency.py                 # 3 controllers + 3 brokers, about 1 min
    python bench/metadata_latency.py --quick         # 10 topics per phase

Phases (issue 12, "Fast metadata propagation"):

1. ``back-to-back``: CreateTopics (1 partition, RF 3) from confluent-kafka, one after another;
   the latency of each call.
2. ``spaced``: the same with ``--gap-s`` between calls (the old 500 ms fetch wait showed as
   about 200 ms here).
3. ``propagation``: per CreateTopics, the time from sending it until every broker's Metadata
   names a leader for the partition (one thread per broker polls its own connection).
   This bounds a committed record's apply lag on every broker from above: it also
   counts the forward to the controller, the commit and the client's round trips.
4. ``describe-after-alter``: IncrementalAlterConfigs through one broker, then
   DescribeConfigs through another at once; how often the old value shows.
5. ``produce-after-create``: CreateTopics, then at once an acks=all produce of one record to
   the leader Metadata names; errors seen and whether the record was appended exactly once.

Writes ``results/metadata_latency.json``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from machine import facts as machine_facts
from replication import Cluster

from tierlog.net.blocking import BlockingConnection
from tierlog.protocol.api import ApiKey

POLL_S = 0.001
PROPAGATION_TIMEOUT_S = 10.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(values: list[float]) -> dict:
    return {"n": len(values), "p50": round(statistics.median(values), 1), "p99": round(_pct(values, 0.99), 1),
            "max": round(max(values), 1), "min": round(min(values), 1)}


def _create(admin: AdminClient, name: str) -> float:
    start = time.perf_counter()
    admin.create_topics([NewTopic(name, 1, 3)], operation_timeout=30)[name].result()
    return (time.perf_counter() - start) * 1000


def phase_create(admin: AdminClient, prefix: str, count: int, gap_s: float) -> dict:
    latencies = []
    for i in range(count):
        latencies.append(_create(admin, f"{prefix}-{i}"))
        time.sleep(gap_s)
    return _summary(latencies)


def _has_leader(conn: BlockingConnection, topic: str) -> bool:
    body = conn.request(ApiKey.METADATA, 12, {"Topics": [{"Name": topic}], "AllowAutoTopicCreation": False})
    for t in body["Topics"]:
        if t["ErrorCode"] == 0 and t["Partitions"] and t["Partitions"][0]["LeaderId"] >= 0:
            return True
    return False


def _watch(conn: BlockingConnection, topic: str, start: float, out: list) -> None:
    deadline = start + PROPAGATION_TIMEOUT_S
    while time.perf_counter() < deadline:
        if _has_leader(conn, topic):
            out.append((time.perf_counter() - start) * 1000)
            return
        time.sleep(POLL_S)
    out.append(float("inf"))


def phase_propagation(admin: AdminClient, conns: list[BlockingConnection], count: int) -> dict:
    worst, per_broker = [], []
    for i in range(count):
        topic = f"prop-{i}"
        seen: list[float] = []
        start = time.perf_counter()
        threads = [threading.Thread(target=_watch, args=(c, topic, start, seen)) for c in conns]
        for t in threads:
            t.start()
        admin.create_topics([NewTopic(topic, 1, 3)], operation_timeout=30)[topic].result()
        for t in threads:
            t.join()
        per_broker += seen
        worst.append(max(seen))
    return {"every_broker_ms": _summary(worst), "each_broker_ms": _summary(per_broker)}


def phase_describe_after_alter(bootstraps: list[str], count: int) -> dict:
    alter = AdminClient({"bootstrap.servers": bootstraps[0]})
    describe = AdminClient({"bootstrap.servers": bootstraps[-1]})
    alter.create_topics([NewTopic("cfg", 1, 3)], operation_timeout=30)["cfg"].result()
    stale = 0
    for i in range(count):
        value = str(60_000 + i)
        res = ConfigResource(ConfigResource.Type.TOPIC, "cfg", incremental_configs=[
            ConfigEntry("retention.ms", value, incremental_operation=AlterConfigOpType.SET)])
        next(iter(alter.incremental_alter_configs([res]).values())).result()
        got = next(iter(describe.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "cfg")]).values()))
        stale += got.result()["retention.ms"].value != value
    return {"tries": count, "stale": stale}


def phase_produce_after_create(admin: AdminClient, bootstrap: str, count: int) -> dict:
    errors: dict[str, int] = {}
    exactly_once = 0
    for i in range(count):
        topic = f"pac-{i}"
        admin.create_topics([NewTopic(topic, 1, 3)], operation_timeout=30)[topic].result()
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                             "retries": 5, "retry.backoff.ms": 10,
                             "error_cb": lambda e: errors.update({e.name(): errors.get(e.name(), 0) + 1})})
        results: list = []
        producer.produce(topic, b"x", on_delivery=lambda err, _m, out=results: out.append(err))
        producer.flush(30)
        exactly_once += _count_records(bootstrap, topic) == 1 and results == [None]
        for err in results:
            if err is not None:
                errors[err.name()] = errors.get(err.name(), 0) + 1
    return {"tries": count, "delivered_exactly_once": exactly_once, "errors": errors}


def _count_records(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.close()
    return high - low


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--gap-s", type=float, default=0.3)
    ap.add_argument("--controllers", type=int, default=3)
    ap.add_argument("--brokers", type=int, default=3)
    args = ap.parse_args()
    count = 10 if args.quick else args.count
    with tempfile.TemporaryDirectory(prefix="tierlog-mdlat-") as tmp:
        cluster = Cluster(Path(tmp), args.brokers, args.controllers)
        try:
            result = _measure(cluster.bootstrap, count, args.gap_s)
        finally:
            cluster.stop()
    result["machine"] = machine_facts()
    result["setup"] = {"controllers": args.controllers, "brokers": args.brokers, "count": count,
                       "gap_s": args.gap_s}
    out = HERE / "results" / "metadata_latency.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))
    print(f"wrote {out}")


def _measure(bootstrap: str, count: int, gap_s: float) -> dict:
    bootstraps = bootstrap.split(",")
    admin = AdminClient({"bootstrap.servers": bootstraps[0]})
    _create(admin, "warmup")
    conns = [BlockingConnection(b.split(":")[0], int(b.split(":")[1]), client_id="mdlat", timeout_s=10)
             for b in bootstraps]
    try:
        return {
            "create_back_to_back_ms": phase_create(admin, "b2b", count, 0.0),
            "create_spaced_ms": phase_create(admin, "spaced", count, gap_s),
            "propagation": phase_propagation(admin, conns, count),
            "describe_after_alter": phase_describe_after_alter(bootstraps, count),
            "produce_after_create": phase_produce_after_create(admin, bootstrap, count),
        }
    finally:
        for c in conns:
            c.close()


if __name__ == "__main__":
    main()
