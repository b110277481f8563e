"""Which part of a topic read a partition's Iceberg table serves (sans-IO; ``remoteStorage=table``).

A table-mode topic's table holds, for each partition, the committed records of the
offsets ``[low, covered]``: ``covered`` is the table property
``tierlog.last-offset.<p>``, set in the same Iceberg commit as the data files, so the
metadata a planner loads says exactly which offsets its snapshot holds; ``low`` is the
lowest offset of the partition's data files (the first uploaded segment's, or the log
start a retention cut left). Between them there is no hole (each upload commits the
segment before it counts as uploaded; backfill commits the older ones first), and no
offset twice (commits are idempotent by offset). Offsets without a row there are
control records and aborted transactions: what a read_committed read leaves out anyway.

So a read's ``[start, end)`` is cut into the table's piece ``[max(start, low),
min(end, covered + 1))`` and the rest (below ``low``, above ``covered``), which the
segments or the brokers read. The table piece's data files (statistics: offset
bounds) are grouped into tasks of at most ``TASK_BYTES_MAX`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierlog.spark.planning import OffsetRange

__all__ = ["TASK_BYTES_MAX", "DataFile", "TableCut", "cut_range", "group_files"]

TASK_BYTES_MAX = 128 * 1024 * 1024      # as Spark's spark.sql.files.maxPartitionBytes


@dataclass(frozen=True, slots=True)
class DataFile:
    path: str
    lower: int          # the lowest offset in the file, inclusive
    upper: int          # the highest, inclusive
    size: int           # bytes


@dataclass(frozen=True, slots=True)
class TableCut:
    table: OffsetRange | None           # read from the table
    files: tuple[DataFile, ...]         # the table piece's files, oldest first
    rest: tuple[OffsetRange, ...]       # read from segments or brokers


def cut_range(r: OffsetRange, covered: int, files: list[DataFile]) -> TableCut:
    """Cut ``r`` by what the table holds of its partition: ``covered`` (inclusive, -1: nothing) and
    the partition's data ``files``."""
    if covered < 0 or not files:
        return TableCut(None, (), (r,) if r.size else ())
    low = min(f.lower for f in files)
    start, end = max(r.start, low), min(r.end, covered + 1)
    if start >= end:
        return TableCut(None, (), (r,) if r.size else ())
    rest = tuple(x for x in (OffsetRange(r.topic, r.partition, r.start, start),
                             OffsetRange(r.topic, r.partition, end, r.end)) if x.size > 0)
    used = tuple(sorted((f for f in files if f.upper >= start and f.lower < end), key=lambda f: f.lower))
    return TableCut(OffsetRange(r.topic, r.partition, start, end), used, rest)


def group_files(files: tuple[DataFile, ...], most: int = TASK_BYTES_MAX) -> list[tuple[DataFile, ...]]:
    """Neighbouring files in groups of at most ``most`` bytes (a larger file alone)."""
    groups: list[list[DataFile]] = []
    size = most
    for f in files:
        if size + f.size > most:
            groups.append([])
            size = 0
        groups[-1].append(f)
        size += f.size
    return [tuple(g) for g in groups]
