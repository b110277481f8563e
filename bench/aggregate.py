"""Combine repeated runs of one broker: the median of every figure, and its range.

A run is ``{"phases": {phase: figures}, ...}`` where figures nest dicts of
numbers (``{"latency_ms": {"p99": 4.2}}``).  A phase that failed in a run is
left out of that phase's median; the count of runs that made it is kept.
"""
from __future__ import annotations

import statistics

__all__ = ["combine"]


def combine(runs: list[dict]) -> dict:
    """{"phases": medians, "range": [min, max] per figure, "runs_ok": per phase}."""
    names = {p for r in runs for p in r.get("phases", {})}
    out = {"phases": {}, "range": {}, "runs_ok": {}}
    for phase in sorted(names):
        ok = [r["phases"][phase] for r in runs
              if phase in r.get("phases", {}) and not r["phases"][phase].get("failed")]
        out["runs_ok"][phase] = len(ok)
        if ok:
            out["phases"][phase] = _median_tree(ok)
            out["range"][phase] = _range_tree(ok)
        else:
            out["phases"][phase] = next(r["phases"][phase] for r in runs if phase in r.get("phases", {}))
    return out


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _median_tree(trees: list[dict]) -> dict:
    out = {}
    for key, first in trees[0].items():
        values = [t[key] for t in trees if key in t]
        if isinstance(first, dict):
            out[key] = _median_tree([v for v in values if isinstance(v, dict)])
        elif _is_number(first):
            out[key] = statistics.median(v for v in values if _is_number(v))
        else:
            out[key] = first
    return out


def _range_tree(trees: list[dict]) -> dict:
    out = {}
    for key, first in trees[0].items():
        values = [t[key] for t in trees if key in t]
        if isinstance(first, dict):
            out[key] = _range_tree([v for v in values if isinstance(v, dict)])
        elif _is_number(first):
            nums = [v for v in values if _is_number(v)]
            out[key] = [min(nums), max(nums)]
    return out
