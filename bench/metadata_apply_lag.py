"""Metadata apply lag on every broker, from the brokers' own metric (issue 12: ≤ 50 ms p99).

    python bench/metadata_apply_lag.py                # 3 controllers + 3 brokers, 200 changes, about 30 s
    python bench/metadata_apply_lag.py --changes 50   # a shorter run

Starts ``tierlog up`` (every node serves its metrics, ``metrics=HOST:PORT`` in its
node line), creates one topic, scrapes every node's histogram
``broker_metadata_metrics_apply_lag_ms`` (a committed batch's apply time on that node
minus its append time on the quorum leader), then makes ``--changes``
IncrementalAlterConfigs of the topic's ``retention.ms`` on a fixed schedule
``--gap-ms`` apart (one ConfigRecord each), waits until every broker applied the
last one, and scrapes again. The difference of the two scrapes is the run's
histogram: every metadata batch committed meanwhile, the alters and the active
controller's NoOpRecords (``metadata.max.idle.interval.ms``) alike.

Per node and over all brokers: batches counted, p50 / p99 (the bound of the first
bucket whose cumulative count reaches the quantile, so an upper bound of the true
quantile at the bucket resolution) and the fraction applied within 50 ms.
Controllers are reported too (the active one applies its own records once they
commit). Writes ``results/metadata_apply_lag.json``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from machine import facts as machine_facts
from machine import loadavg
from prometheus_client.parser import text_string_to_metric_families
from replication import Cluster

METRIC = "broker_metadata_metrics_apply_lag_ms"
OFFSET = "broker_metadata_metrics_last_applied_record_offset"
GOAL_MS = 50.0
APPLIED_TIMEOUT_S = 10.0
TOPIC = "apply-lag"


def scrape(address: str) -> dict:
    """One node's cumulative buckets {le: count} and last applied offset."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    buckets, offset = {}, -1
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == METRIC + "_bucket":
                buckets[float(s.labels["le"])] = s.value
            elif s.name == OFFSET:
                offset = int(s.value)
    return {"buckets": buckets, "offset": offset}


def quantile_bound(buckets: dict[float, float], q: float) -> float:
    """The first bucket bound whose cumulative count reaches ``q`` of the total (inf: beyond the last)."""
    total = buckets[float("inf")]
    return next(le for le in sorted(buckets) if buckets[le] >= q * total)


def _bound(le: float) -> float | str:
    return "+Inf" if le == float("inf") else le


def summary(buckets: dict[float, float]) -> dict:
    total = buckets[float("inf")]
    if total == 0:
        return {"count": 0}
    return {"count": int(total), "p50_ms": _bound(quantile_bound(buckets, 0.5)),
            "p99_ms": _bound(quantile_bound(buckets, 0.99)),
            "within_50ms": round(buckets[GOAL_MS] / total, 4), "buckets": {str(k): int(v) for k, v in
                                                                             sorted(buckets.items())}}


def alter_spaced(admin: AdminClient, changes: int, gap_s: float) -> list[float]:
    """``changes`` alters started ``gap_s`` apart (a late one starts at once); each one's latency (ms)."""
    latencies, start = [], time.monotonic()
    for i in range(changes):
        time.sleep(max(0.0, start + i * gap_s - time.monotonic()))
        res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC, incremental_configs=[
            ConfigEntry("retention.ms", str(3_600_000 + i), incremental_operation=AlterConfigOpType.SET)])
        sent = time.monotonic()
        next(iter(admin.incremental_alter_configs([res]).values())).result()
        latencies.append((time.monotonic() - sent) * 1000)
    return latencies


def wait_applied(nodes: dict[int, dict], brokers: list[int]) -> None:
    """Until every broker applied what the furthest node (the active controller) has."""
    target = max(scrape(n["metrics"])["offset"] for n in nodes.values())
    deadline = time.monotonic() + APPLIED_TIMEOUT_S
    while any(scrape(nodes[b]["metrics"])["offset"] < target for b in brokers):
        if time.monotonic() > deadline:
            raise RuntimeError(f"brokers did not apply offset {target} within {APPLIED_TIMEOUT_S}s")
        time.sleep(0.01)


def measure(cluster: Cluster, changes: int, gap_s: float) -> dict:
    brokers = [i for i, n in cluster.nodes.items() if "broker" in n["roles"]]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3)], operation_timeout=30)[TOPIC].result()
    wait_applied(cluster.nodes, brokers)
    before = {i: scrape(n["metrics"])["buckets"] for i, n in cluster.nodes.items()}
    latencies = alter_spaced(admin, changes, gap_s)
    wait_applied(cluster.nodes, brokers)
    after = {i: scrape(n["metrics"])["buckets"] for i, n in cluster.nodes.items()}
    runs = {i: {le: after[i][le] - before[i].get(le, 0) for le in after[i]} for i in after}
    overall = {le: sum(runs[b][le] for b in brokers) for le in runs[brokers[0]]}
    latencies.sort()
    return {
        "brokers_overall": summary(overall),
        "per_node": {str(i): {"roles": cluster.nodes[i]["roles"], **summary(runs[i])} for i in sorted(runs)},
        "alter_latency_ms": {"p50": round(latencies[len(latencies) // 2], 1),
                             "p99": round(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 1)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--changes", type=int, default=200)
    ap.add_argument("--gap-ms", type=float, default=50.0)
    ap.add_argument("--controllers", type=int, default=3)
    ap.add_argument("--brokers", type=int, default=3)
    args = ap.parse_args()
    machine = {**machine_facts(),
               "uptime_start": subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()}
    with tempfile.TemporaryDirectory(prefix="tierlog-applylag-") as tmp:
        cluster = Cluster(Path(tmp), args.brokers, args.controllers)
        try:
            result = measure(cluster, args.changes, args.gap_ms / 1000)
        finally:
            cluster.stop()
    result["machine"] = {**machine, "loadavg_end": loadavg()}
    result["setup"] = {"controllers": args.controllers, "brokers": args.brokers, "changes": args.changes,
                       "gap_ms": args.gap_ms}
    out = HERE / "results" / "metadata_apply_lag.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("machine", "per_node")}, indent=2))
    for node, s in result["per_node"].items():
        print(f"node {node} ({s['roles']}): count={s['count']} p50={s.get('p50_ms')} p99={s.get('p99_ms')} "
              f"within_50ms={s.get('within_50ms')}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
