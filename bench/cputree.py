"""CPU seconds of a process and everything below it, from /proc (Linux only).

A Spark phase runs in a JVM this process started and in Python workers the JVM's
daemon forks and reaps; a child's time moves to its parent's cutime/cstime when it is
reaped, so summing utime + stime + cutime + cstime over the live tree counts every
process once, whether it ended during the phase or not. Taken before and after a
phase, the difference is what the tree spent on it (load-independent, unlike MiB/s).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["tree_cpu_s"]

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, utime + stime + cutime + cstime in seconds) of ``pid``; None once gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()      # after "pid (comm) "
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / _TICK


def tree_cpu_s(root: int, *, include_root: bool = True) -> float:
    """CPU seconds of ``root``'s live tree (without ``root`` itself unless ``include_root``)."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (s := _stat(int(entry.name))) is not None:
            stats[int(entry.name)] = s
    children: dict[int, list[int]] = {}
    for pid, (ppid, _cpu) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo += children.get(pid, [])
    if include_root and root in stats:
        total += stats[root][1]
    return total
