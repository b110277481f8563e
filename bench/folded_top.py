"""The busiest functions in py-spy's folded stacks (``spark_read.py --profile``): self and total samples.

    .venv/bin/python bench/folded_top.py results/pyspy_spark_read_direct.folded [--top 25] [--under read]

A line of a folded file is ``frame;frame;...;frame count`` (py-spy ``-f raw``: a process's frames start
with ``process N:"cmdline"``). Self: the samples whose innermost frame is the function; total: the
samples that have it anywhere on the stack (once per sample). ``--under`` (repeatable) keeps only the stacks that hold
a frame containing one of the texts (``--under "worker (daemon" --under _produce``: the forked workers and
the read-ahead threads, not the daemons' own accept loops).
"""
from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_LINE = re.compile(r"\s*\([^()]*:\d+\)$")       # "func (file.py:12)" -> "func (file.py)"


def frame_name(frame: str) -> str:
    """A frame without its line number, so a function's samples add up across its lines."""
    if frame.startswith("process "):
        return frame
    match = _LINE.search(frame)
    if match is None:
        return frame
    file = match.group(0).strip()[1:].rsplit(":", 1)[0]
    return f"{frame[:match.start()]} ({file})"


def tally(lines, under: list[str]) -> tuple[Counter, Counter, int]:
    """(self samples, total samples, all samples) per function."""
    own, total, samples = Counter(), Counter(), 0
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit() or (under and not any(u in stack for u in under)):
            continue
        frames = [frame_name(f) for f in stack.split(";") if not f.startswith("process ")]
        if not frames:
            continue
        n = int(count)
        samples += n
        own[frames[-1]] += n
        for name in set(frames):
            total[name] += n
    return own, total, samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folded", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--under", action="append", default=[], help="only stacks with a frame containing this text")
    args = ap.parse_args()
    own, total, samples = tally(args.folded.read_text().splitlines(), args.under)
    print(f"{samples} samples{f' under {args.under}' if args.under else ''}")
    for title, counter in (("self", own), ("total", total)):
        print(f"\n{title}:")
        for name, n in counter.most_common(args.top):
            print(f"{100 * n / max(samples, 1):5.1f}% {n:7d}  {name}")


if __name__ == "__main__":
    main()
