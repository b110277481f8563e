"""Where a tierlog node spends its time under the produce + consume workload.

    .venv/bin/python bench/profile.py [--records N]

Starts a node, attaches ``py-spy record`` to it once it serves (sampling at
200 Hz, on-CPU samples only; ``.venv/bin/pip install py-spy``), lets
bench/workload.py produce N records (acks=1) and then consume them, and writes
under bench/results/:

* ``profile-tierlog.folded``: the raw samples, one collapsed stack per line
  (the input format of flamegraph.pl, inferno and speedscope);
* ``profile-tierlog-top.txt``: the top functions by self and by total samples;
* ``profile-tierlog-flame.png``: a flame graph (root at the bottom).
"""
from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import brokers
import run

SAMPLE_HZ = 200
ATTACH_S = 1.0
DEFAULT_RECORDS = 1_000_000
TOP_N = 25
FLAME_MIN_FRACTION = 0.004  # frames narrower than this share of samples are not drawn
FLAME_LABEL_FRACTION = 0.03


def py_spy() -> str:
    path = Path(sys.executable).parent / "py-spy"
    found = str(path) if path.exists() else shutil.which("py-spy")
    if not found:
        raise SystemExit("py-spy not found: .venv/bin/pip install py-spy")
    return found


def profile_node(records: int, folded: Path) -> dict:
    """Run the workload against a node with py-spy attached once it serves (so
    start-up is not in the profile); returns the phases' figures."""
    phases = [
        run.Phase("produce_acks1", ("produce", "--topic", "profile", "--acks", "1",
                                    "--records", str(records), "--create")),
        run.Phase("consume", ("consume", "--topic", "profile", "--expect", str(records))),
    ]
    workroot = Path(tempfile.mkdtemp(prefix="tierlog-profile-"))
    try:
        broker = brokers.start_broker("tierlog", workroot / "tierlog")
        try:
            with sampling(broker.pid, folded):
                return {p.name: run.run_phase(broker, p) for p in phases}
        finally:
            broker.stop()
    finally:
        shutil.rmtree(workroot, ignore_errors=True)


@contextlib.contextmanager
def sampling(pid: int, folded: Path):
    """py-spy attached to ``pid`` for the duration of the block; Ctrl-C (SIGINT)
    makes it stop and write the samples."""
    cmd = [py_spy(), "record", "--pid", str(pid), "--format", "raw", "--rate", str(SAMPLE_HZ),
           "-o", str(folded)]
    spy = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(ATTACH_S)
        if spy.poll() is not None:
            raise SystemExit(f"py-spy could not attach to {pid}:\n{spy.stdout.read()}")
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        out, _ = spy.communicate(timeout=60)
    if not folded.exists():
        raise SystemExit(f"py-spy wrote no samples:\n{out}")


def read_folded(path: Path) -> list[tuple[list[str], int]]:
    """(frames root first, sample count) per line; a frame is 'function (file)',
    line numbers dropped so one function's samples add up."""
    stacks = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            stacks.append(([_function(f) for f in stack.split(";")], int(count)))
    return stacks


def _function(frame: str) -> str:
    name, sep, where = frame.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0]})" if sep else frame


def top_functions(stacks) -> tuple[int, Counter, Counter]:
    """Total samples, samples per function as the leaf (self), and per function
    anywhere on the stack (total, counted once per stack)."""
    own, inclusive, total = Counter(), Counter(), 0
    for frames, count in stacks:
        total += count
        own[frames[-1]] += count
        for f in set(frames):
            inclusive[f] += count
    return total, own, inclusive


def top_text(stacks, figures: dict) -> str:
    total, own, inclusive = top_functions(stacks)
    lines = [f"py-spy samples at {SAMPLE_HZ} Hz (on CPU only): {total}", _phase_line(figures), ""]
    for title, counter in (("self", own), ("total (inclusive)", inclusive)):
        lines.append(f"top {TOP_N} by {title} samples:")
        lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in counter.most_common(TOP_N)]
        lines.append("")
    return "\n".join(lines)


def _phase_line(figures: dict) -> str:
    parts = []
    for name, f in figures.items():
        if f.get("failed"):
            parts.append(f"{name}: FAILED")
        else:
            parts.append(f"{name}: {f.get('records')} records, {f.get('mib_per_s', 0):.1f} MiB/s, "
                         f"broker CPU {f.get('broker_cpu_s', 0):.1f} s")
    return "workload: " + "; ".join(parts)


def _tree(stacks) -> dict:
    root = {"n": 0, "kids": {}}
    for frames, count in stacks:
        root["n"] += count
        node = root
        for f in frames:
            node = node["kids"].setdefault(f, {"n": 0, "kids": {}})
            node["n"] += count
    return root


def _boxes(node: dict, x: float, depth: int, total: int, out: list) -> None:
    for name, kid in sorted(node["kids"].items()):
        width = kid["n"] / total
        if width >= FLAME_MIN_FRACTION:
            out.append((x, depth, width, name))
            _boxes(kid, x, depth + 1, total, out)
        x += width


def draw_flame(stacks, path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    root = _tree(stacks)
    boxes = []
    _boxes(root, 0.0, 0, max(1, root["n"]), boxes)
    depth = 1 + max((b[1] for b in boxes), default=0)
    fig, ax = plt.subplots(figsize=(18, 1 + 0.24 * depth))
    for x, d, w, name in boxes:
        ax.barh(d, w, left=x, height=0.95, color=plt.cm.YlOrRd(0.25 + 0.5 * (zlib.crc32(name.encode()) % 97) / 97),
                edgecolor="white", linewidth=0.3)
        if w >= FLAME_LABEL_FRACTION:
            ax.text(x + 0.002, d, _clip(name, w), va="center", fontsize=6.5)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.5, depth - 0.5)
    ax.set_yticks([])
    ax.set_xlabel("share of on-CPU samples")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _clip(name: str, width: float) -> str:
    chars = int(width * 260)
    return name if len(name) <= chars else name[:max(1, chars - 1)] + "…"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    p.add_argument("--out", type=Path, default=run.RESULTS)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    folded = args.out / "profile-tierlog.folded"
    figures = profile_node(args.records, folded)
    stacks = read_folded(folded)
    text = top_text(stacks, figures)
    (args.out / "profile-tierlog-top.txt").write_text(text)
    draw_flame(stacks, args.out / "profile-tierlog-flame.png",
               f"tierlog node, {args.records} x 1 KiB produced (acks=1) then consumed")
    print(text)
    return 0 if not any(f.get("failed") for f in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
