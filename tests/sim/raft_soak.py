"""Soak the Raft simulation by hand: ``python -m tests.sim.raft_soak --seeds 20000 [--start N] [--long]``.

Prints each failing seed (``SEED=<n>``) and a summary; exit status 1 on any failure.
Replay a seed in pytest with ``TIERLOG_SIM_SEED=<n> pytest tests/sim -k raft``
(the --long shape is replayed with ``--start <n> --seeds 1 --long``).
"""

from __future__ import annotations

import argparse
import sys
import time

from .raft_sim import SimFailure, params_for, run_seed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--long", action="store_true", help="15 s of chaos per seed instead of 2.5 s")
    args = ap.parse_args(argv)
    failures = 0
    started = time.monotonic()
    totals: dict[str, int] = {}
    for seed in range(args.start, args.start + args.seeds):
        try:
            stats = run_seed(seed, params_for(seed, args.long))
        except SimFailure as e:
            failures += 1
            print(f"FAIL {e}", flush=True)
            continue
        for k, v in stats.items():
            totals[k] = totals.get(k, 0) + v
        done = seed - args.start + 1
        if done % 500 == 0:
            print(f"{done} seeds, {failures} failures, {time.monotonic() - started:.0f} s", flush=True)
    print(f"seeds={args.seeds} failures={failures} wall={time.monotonic() - started:.1f}s totals={totals}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
