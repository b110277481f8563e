"""CPU seconds of a process and everything below it, from /proc (Linux only).

A Spark phase runs in a JVM this process started and in Python workers the JVM's
daemon forks and reaps; a child's time moves to its parent's cutime/cstime when it is
reaped, so summing utime + stime + cutime + cstime over the live tree counts every
process once, whether it ended during the phase or not. Taken before and after a
phase, the difference is what the tree spent on it (load-independent, unlike MiB/s).
``thread_cpu_s`` splits one process (Spark's JVM) by thread name, ``descendants`` finds
the processes below one (the JVM, the pyspark daemon).
"""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

__all__ = ["descendants", "own_cpu_s", "thread_cpu_s", "tree_cpu_s"]

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, utime + stime + cutime + cstime in seconds) of ``pid``; None once gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()      # after "pid (comm) "
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / _TICK


def _all_stats() -> dict[int, tuple[int, float]]:
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (s := _stat(int(entry.name))) is not None:
            stats[int(entry.name)] = s
    return stats


def _below(root: int, stats: dict[int, tuple[int, float]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _cpu) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def tree_cpu_s(root: int, *, include_root: bool = True) -> float:
    """CPU seconds of ``root``'s live tree (without ``root`` itself unless ``include_root``)."""
    stats = _all_stats()
    total = sum(stats[pid][1] for pid in _below(root, stats))
    if include_root and root in stats:
        total += stats[root][1]
    return total


def own_cpu_s(pid: int) -> float:
    """CPU seconds (utime + stime) of ``pid`` itself: all its threads, ended ones included, none of
    its children (0 once gone)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    return sum(int(f) for f in raw[raw.rindex(")") + 2:].split()[11:13]) / _TICK


def descendants(root: int, cmdline_part: str) -> list[int]:
    """The live processes below ``root`` whose command line holds ``cmdline_part``."""
    found = []
    for pid in _below(root, _all_stats()):
        with contextlib.suppress(OSError):
            if cmdline_part in Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " "):
                found.append(pid)
    return found


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds (utime + stime) of ``pid``'s live threads, summed by name without its digits
    (``Executor task launch worker for task 3`` and ``... task 5`` count as one; an ended thread's
    time is only in ``own_cpu_s``)."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            raw = (task / "stat").read_text()
            name = re.sub(r"[0-9]+", "N", raw[raw.index("(") + 1:raw.rindex(")")])
            fields = raw[raw.rindex(")") + 2:].split()
            out[name] = out.get(name, 0.0) + sum(int(f) for f in fields[11:13]) / _TICK
    return out
