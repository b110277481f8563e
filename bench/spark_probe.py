"""Where a Spark read's CPU goes: CPU seconds per part of the reader and py-spy profiles of the workers.

``CpuMeter.phase(run)`` returns ``run()``'s result and the CPU seconds (``cputree``, from /proc) that
each part spent on it: the node, the moto server, and the reader split into this process (the driver,
or the consumer), Spark's JVM (its own threads, and per thread name under ``jvm_threads``) and the
Python workers below the JVM (the pyspark daemon and the workers it forks). With ``profile_dir`` a
Spark phase also runs ``py-spy record --subprocesses`` on the pyspark daemon (the workers it forks
included) and writes folded stacks (``-f raw``, one ``stack count`` a line: flamegraph.pl's input)
to ``profile_dir/pyspy_<name>.folded``.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from cputree import descendants, own_cpu_s, thread_cpu_s, tree_cpu_s

__all__ = ["CpuMeter"]

_JVM_THREADS_SHOWN = 8          # the busiest JVM thread names kept per phase


class CpuMeter:
    def __init__(self, node_pid: int, moto_pid: int | None, profile_dir: Path | None = None):
        self.pids = {"node": node_pid, "moto": moto_pid}
        self.profile_dir = profile_dir

    def phase(self, name: str, run, *, profile: bool = False):
        """``run()``'s result and the CPU seconds each part spent on it (``profile``: py-spy too, with a
        ``profile_dir``)."""
        before = self._now()
        with _PySpy(self.profile_dir if profile else None, name):
            result = run()
        after = self._now()
        cpu = {k: round(after[k] - before.get(k, 0.0), 2) for k in after if k != "jvm_threads"}
        threads = {k: v - before.get("jvm_threads", {}).get(k, 0.0)        # live threads only: a thread that
                   for k, v in after.get("jvm_threads", {}).items()}     # ended in the phase is left out
        busiest = sorted(threads.items(), key=lambda kv: -kv[1])[:_JVM_THREADS_SHOWN]
        cpu["jvm_threads"] = {k: round(v, 2) for k, v in busiest if v >= 0.05}
        return result, cpu

    def _now(self) -> dict:
        out: dict = {name: tree_cpu_s(pid) for name, pid in self.pids.items() if pid is not None}
        everything = tree_cpu_s(os.getpid())
        out["reader"] = everything - sum(out.values())
        jvm = _jvm()
        if jvm is not None:
            jvm_tree = tree_cpu_s(jvm)
            out["reader_jvm"] = own_cpu_s(jvm)
            out["reader_python_workers"] = jvm_tree - out["reader_jvm"]
            out["reader_driver"] = out["reader"] - jvm_tree
            out["jvm_threads"] = thread_cpu_s(jvm)
        return out


def _jvm() -> int | None:
    found = descendants(os.getpid(), "bin/java")
    return found[0] if found else None


class _PySpy:
    """``py-spy record --subprocesses`` on each pyspark daemon (Spark keeps one per worker module: the
    readers', the planners') while the block runs; their folded stacks joined into one file (nothing
    without a directory, or before Spark started a daemon)."""

    def __init__(self, directory: Path | None, name: str):
        self.directory, self.name = directory, name
        self.procs: list[tuple[subprocess.Popen, Path]] = []

    def __enter__(self):
        jvm = _jvm() if self.directory is not None else None
        pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        for daemon in _daemons(jvm) if jvm is not None else []:
            part = self.directory / f"pyspy_{self.name}.{daemon}.part"
            self.procs.append((subprocess.Popen(
                [pyspy, "record", "--subprocesses", "-f", "raw", "-r", "100", "-o", str(part), "-p", str(daemon)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), part))
        return self

    def __exit__(self, *exc) -> None:
        if not self.procs:
            return
        lines = []
        for proc, part in self.procs:
            proc.send_signal(signal.SIGINT)        # py-spy writes its output on SIGINT
            _, err = proc.communicate(timeout=60)
            if part.exists():
                lines.append(part.read_text())
                part.unlink()
            elif proc.returncode:
                print(f"py-spy: exit {proc.returncode}: {err.decode(errors='replace')[-300:]}", file=sys.stderr)
        (self.directory / f"pyspy_{self.name}.folded").write_text("".join(lines))


def _daemons(jvm: int) -> list[int]:
    """The pyspark daemons the JVM started (not the workers they forked: ``--subprocesses`` follows those)."""
    daemons = set(descendants(jvm, "pyspark.daemon"))
    return sorted(pid for pid in daemons if _parent(pid) not in daemons)


def _parent(pid: int) -> int:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(raw[raw.rindex(")") + 2:].split()[1])
