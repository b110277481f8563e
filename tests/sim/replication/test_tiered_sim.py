"""Seeded simulation of one tiered partition (see tiered_sim.py for the model and the invariants).

TIERLOG_SIM_SEED=<n> replays one seed; TIERLOG_TIERED_SIM_SEEDS=<n> changes how many run.
"""
from __future__ import annotations

import os

from tiered_sim import TieredSim

_SEEDS = int(os.environ.get("TIERLOG_TIERED_SIM_SEEDS", "400"))
_ONE = os.environ.get("TIERLOG_SIM_SEED")
SEEDS = [int(_ONE)] if _ONE is not None else list(range(_SEEDS))


def test_tiered_simulation_all_seeds():
    totals: dict[str, int] = {}
    for seed in SEEDS:
        sim = TieredSim(seed)
        try:
            sim.run()
        except AssertionError as e:
            raise AssertionError(f"tiered sim failed: SEED={seed} (replay: TIERLOG_SIM_SEED={seed}): {e}") from e
        for k, v in sim.stats.items():
            totals[k] = totals.get(k, 0) + v
    print(f"\ntiered sim: {len(SEEDS)} seeds: {totals}")
    if len(SEEDS) > 20:         # the faults and the work the invariants are about did happen
        for key in ("uploads", "failed_uploads", "torn_uploads", "lost_publishes", "written_failed_publishes",
                    "late_uploads", "lagging_hw_leaders", "local_deletes",
                    "remote_deletes", "leader_changes", "failed_deletes"):
            assert totals[key] > 0, (key, totals)
