"""Offsets behind latest: the source metrics Spark's Kafka source reports in streaming progress.

Spark's Kafka source puts ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and
``avgOffsetsBehindLatest`` in each progress report's ``sources[i].metrics``: per
partition, the latest offset the source saw minus the end offset of the batch. A
Python data source cannot fill ``metrics`` (PySpark 4.2's Python stream has no
ReportsSourceMetrics), but the tierlog source reports its latest offsets
(``reportLatestOffset``), so both halves are in the progress report and
`offsets_behind_latest` computes the same three values, as the same strings.
"""

from __future__ import annotations

import json

__all__ = ["offsets_behind_latest"]


def _offsets(value) -> dict[tuple[str, str], int]:
    if isinstance(value, str):
        value = json.loads(value)
    return {(t, p): int(o) for t, parts in (value or {}).items() for p, o in parts.items()}


def offsets_behind_latest(source: dict) -> dict[str, str] | None:
    """The Kafka source's metrics for one ``sources[i]`` of a progress report (None before a batch
    ended or when the source reported no latest offsets)."""
    latest, end = _offsets(source.get("latestOffset")), _offsets(source.get("endOffset"))
    behind = [latest[tp] - end[tp] for tp in latest if tp in end]
    if not behind:
        return None
    return {"minOffsetsBehindLatest": str(min(behind)), "maxOffsetsBehindLatest": str(max(behind)),
            "avgOffsetsBehindLatest": str(sum(behind) / len(behind))}
