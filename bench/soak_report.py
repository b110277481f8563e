"""The soak's figures: recovery per fault kind and the Jepsen-style timeline PNG.

For each fault: ``produce_recovery_s``, from the fault's beginning until every sequence
producer has an acknowledgement of a record sent after it began (the time until producers
succeed again); ``unavailable_s``, the longest stretch without any acknowledgement on one
partition of the data topic between the fault's beginning and 10 s past its end; and
``replicated_s``, from the fault's end until the health monitor first sees every partition with
its whole replica set in the ISR.  Per kind: p50, p99 and max of each.
"""
from __future__ import annotations

import math
import threading
import time
from collections import defaultdict

from soak_checker import metadata
from soak_nemesis import Fault
from soak_workload import Ack

WATCHED = ("soak-data", "soak-tiered", "soak-txn", "soak-out")


class Health(threading.Thread):
    """Every ~0.5 s: how many watched partitions are offline or under-replicated (from a live broker)."""

    def __init__(self, cluster, t0: float):
        super().__init__(daemon=True, name="health")
        self.cluster, self.t0 = cluster, t0
        self.samples: list[tuple[float, int, int]] = []        # (time, offline, under-replicated)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.5):
            for b in self.cluster.brokers:
                if not b.alive():
                    continue
                try:
                    resp = metadata(b, list(WATCHED))
                except (OSError, ConnectionError):
                    continue
                parts = [p for t in resp["Topics"] if not t["ErrorCode"] for p in t["Partitions"]]
                offline = sum(1 for p in parts if p["LeaderId"] < 0)
                urp = sum(1 for p in parts if len(p["IsrNodes"]) < len(p["ReplicaNodes"]))
                self.samples.append((time.monotonic() - self.t0, offline, urp))
                break


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, math.ceil(q * len(s)) - 1)], 2)


def recovery(faults: list[Fault], acks: dict[str, list[Ack]], health: list[tuple[float, int, int]],
             end_s: float) -> tuple[list[dict], dict[str, dict]]:
    rows = []
    last_ack = max((a.acked for got in acks.values() for a in got), default=end_s)
    for f in faults:
        fault_end = f.end if f.end is not None else end_s
        produce = []
        for got in acks.values():
            first = next((a.acked for a in got if a.sent >= f.start), None)
            produce.append(math.inf if first is None else first - f.start)
        gaps = []
        window_end = min(fault_end + 10, last_ack)
        for part_acks in _by_partition(acks).values():
            times = [f.start] + sorted(a.acked for a in part_acks if f.start <= a.acked <= window_end) + [window_end]
            if window_end > f.start:
                gaps.append(max(b - a for a, b in zip(times, times[1:])))
        replicated = next((t - fault_end for t, offline, urp in health if t >= fault_end and not offline and not urp),
                          None)
        rows.append({**f.row(), "produce_recovery_s": None if not produce or math.inf in produce
                     else round(max(produce), 2), "unavailable_s": round(max(gaps), 2) if gaps else None,
                     "replicated_s": None if replicated is None else round(replicated, 2)})
    table: dict[str, dict] = {}
    kinds = defaultdict(list)
    for r in rows:
        kinds[r["kind"]].append(r)
    for kind, rs in sorted(kinds.items()):
        entry: dict = {"faults": len(rs)}
        for metric in ("produce_recovery_s", "unavailable_s", "replicated_s"):
            vals = [r[metric] for r in rs if r[metric] is not None]
            entry[metric] = {"p50": pct(vals, 0.5), "p99": pct(vals, 0.99), "max": max(vals) if vals else None,
                             "never": len(rs) - len(vals)}
        table[kind] = entry
    return rows, table


def _by_partition(acks: dict[str, list[Ack]]) -> dict[int, list[Ack]]:
    out: dict[int, list[Ack]] = defaultdict(list)
    for got in acks.values():
        for a in got:
            out[a.partition].append(a)
    return out


COLORS = {"kill": "#d62728", "pause": "#ff7f0e", "isolate": "#9467bd", "controller-split": "#8c564b",
          "one-way": "#e377c2", "s3-outage": "#7f7f7f", "disk-full": "#bcbd22", "slow-disk": "#17becf",
          "clock-step": "#1f77b4", "lost-object": "#000000"}


def timeline(path, faults: list[Fault], acks: dict[str, list[Ack]], health, nodes: list[int], end_s: float,
             title: str) -> None:
    """Throughput and p99 latency per second above one row per node (and the object store) with its faults."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    seconds = int(end_s) + 1
    count = [0] * seconds
    lat: list[list[float]] = [[] for _ in range(seconds)]
    for got in acks.values():
        for a in got:
            s = int(a.acked)
            if 0 <= s < seconds:
                count[s] += 1
                lat[s].append((a.acked - a.sent) * 1000)
    p99 = [pct(v, 0.99) if v else math.nan for v in lat]
    rows = [*nodes, "s3"]
    fig, (ax_tp, ax_lat, ax_urp, ax_f) = plt.subplots(
        4, 1, sharex=True, figsize=(14, 3 + 0.35 * len(rows) + 4),
        gridspec_kw={"height_ratios": [2, 2, 1, 0.35 * len(rows) + 0.5]})
    ax_tp.plot(range(seconds), count, lw=0.8, color="#2ca02c")
    ax_tp.set_ylabel("acks/s")
    ax_lat.plot(range(seconds), p99, lw=0.8, color="#1f77b4")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("p99 ack ms")
    ax_urp.step([t for t, _, _ in health], [u for _, _, u in health], lw=0.8, where="post", label="under-replicated")
    ax_urp.step([t for t, _, _ in health], [o for _, o, _ in health], lw=0.8, where="post", label="offline")
    ax_urp.set_ylabel("partitions")
    ax_urp.legend(loc="upper right", fontsize=7)
    for f in faults:
        row = rows.index("s3" if f.node is None else f.node)
        end = f.end if f.end is not None else end_s
        ax_f.barh(row, end - f.start, left=f.start, height=0.7, color=COLORS.get(f.planned.kind, "k"))
    ax_f.set_yticks(range(len(rows)), [f"node {r}" if r != "s3" else "S3" for r in rows])
    ax_f.invert_yaxis()
    ax_f.set_xlabel("seconds")
    ax_f.legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items()
                         if any(f.planned.kind == k for f in faults)], loc="upper center",
                bbox_to_anchor=(0.5, -0.35), ncol=8, fontsize=7)
    ax_tp.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
