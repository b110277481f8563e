"""Turning options and offsets into offset ranges: resolve, split, rate-limit.

Offsets kept in Spark's checkpoint have the Kafka source's JSON form:
``{"topic": {"0": 42, "1": 17}}`` (next offset to read, per partition).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from tierlog.client import EARLIEST, LATEST, Cluster
from tierlog.clock import monotonic_ms
from tierlog.spark.options import OffsetSpec, OptionError, SourceOptions

__all__ = ["OffsetRange", "discover", "from_json", "rate_limit", "resolve", "split_range", "split_ranges", "to_json"]

TP = tuple[str, int]


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int          # inclusive
    end: int            # exclusive

    @property
    def size(self) -> int:
        return self.end - self.start


def to_json(offsets: dict[TP, int]) -> dict:
    out: dict = {}
    for (t, p), off in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(off)
    return out


def from_json(obj: dict) -> dict[TP, int]:
    return {(t, int(p)): int(off) for t, parts in obj.items() for p, off in parts.items()}


def discover(cluster: Cluster, opts: SourceOptions) -> list[TP]:
    """The partitions the options select, as the cluster knows them now."""
    if opts.assign is not None:
        return list(opts.assign)
    if opts.subscribe is not None:
        return cluster.partitions_of(list(opts.subscribe))
    assert opts.subscribe_pattern is not None, "the options name assign, subscribe or subscribePattern"
    return cluster.partitions_of(cluster.topics_matching(opts.subscribe_pattern))


def resolve(cluster: Cluster, spec: OffsetSpec, tps: list[TP], strategy: str = "error") -> dict[TP, int]:
    """Concrete offsets for ``tps`` from a starting/ending spec."""
    if not tps:
        return {}
    if spec.kind in ("earliest", "latest"):
        return cluster.list_offsets(tps, EARLIEST if spec.kind == "earliest" else LATEST)
    if spec.kind == "offsets":
        missing = sorted(set(tps) - set(spec.offsets))
        if missing:
            raise OptionError(f"{spec.option}: specific offsets must name every partition read; missing "
                              + ", ".join(f"{t}-{p}" for t, p in missing))
        out = {tp: spec.offsets[tp] for tp in tps}
        special = {tp: off for tp, off in out.items() if off in (EARLIEST, LATEST)}
        for off_kind in (EARLIEST, LATEST):
            group = [tp for tp, off in special.items() if off == off_kind]
            if group:
                out.update(cluster.list_offsets(group, off_kind))
        return out
    if spec.kind == "timestamp":
        timestamps = dict.fromkeys(tps, spec.timestamp)
    else:
        missing = sorted(set(tps) - set(spec.offsets))
        if missing:
            raise OptionError(f"{spec.option}: must name every partition read; missing "
                              + ", ".join(f"{t}-{p}" for t, p in missing))
        timestamps = {tp: spec.offsets[tp] for tp in tps}
    found = cluster.list_offsets(tps, timestamps)
    none = [tp for tp, off in found.items() if off < 0]
    if none:
        if strategy == "error" or spec.option.startswith("ending"):
            latest = cluster.list_offsets(none, LATEST)
            if spec.option.startswith("ending"):
                found.update(latest)       # no record at or after it: read to the end
            else:
                raise OptionError(f"{spec.option}: no record at or after the timestamp in "
                                  + ", ".join(f"{t}-{p}" for t, p in none)
                                  + " (set startingOffsetsByTimestampStrategy=latest to start at the end)")
        else:
            found.update(cluster.list_offsets(none, LATEST))
    return found


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None,
                 max_records: int | None) -> list[OffsetRange]:
    """Split big ranges so there are about ``min_partitions`` tasks and none over ``max_records``."""
    ranges = [r for r in ranges if r.size > 0]
    if max_records:
        ranges = [piece for r in ranges for piece in split_range(r, -(-r.size // max_records))]
    if min_partitions and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        ideal = total / min_partitions
        ranges = [piece for r in ranges for piece in split_range(r, max(1, round(r.size / ideal)))]
    return ranges


def split_range(r: OffsetRange, parts: int) -> list[OffsetRange]:
    parts = max(1, min(parts, r.size))
    bounds = [r.start + (r.size * i) // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in pairwise(bounds) if b > a]


def rate_limit(start: dict[TP, int], latest: dict[TP, int], max_rows: int) -> dict[TP, int]:
    """End offsets taking at most ``max_rows`` records in all, shared by each partition's backlog."""
    backlog = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        share = max_rows * backlog[tp] / total
        take = int(share) if share >= 1 else (1 if backlog[tp] else 0)
        out[tp] = min(end, start.get(tp, end) + take)
    return out


class TriggerClock:
    """When the last batch was planned (for minOffsetsPerTrigger with maxTriggerDelay)."""

    def __init__(self):
        self.last_ms = monotonic_ms()

    def due(self, delay_ms: int) -> bool:
        return monotonic_ms() - self.last_ms >= delay_ms

    def reset(self) -> None:
        self.last_ms = monotonic_ms()
