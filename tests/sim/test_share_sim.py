"""Seeded simulation of a share-partition (see share_sim.py for the model and invariants).

TIERLOG_SIM_SEED=<n> replays one seed; TIERLOG_SIM_SEEDS=<n> changes how many run (40 by default:
about 11 s of CPU, as each event checks a reload).
"""
from __future__ import annotations

import os

from share_sim import Sim

_SEEDS = int(os.environ.get("TIERLOG_SIM_SEEDS", "40"))
_ONE = os.environ.get("TIERLOG_SIM_SEED")
SEEDS = [int(_ONE)] if _ONE is not None else list(range(_SEEDS))


def test_share_partition_simulation_all_seeds():
    totals: dict[str, int] = {}
    for seed in SEEDS:
        for k, v in Sim(seed).run().items():
            totals[k] = totals.get(k, 0) + v
    if len(SEEDS) >= 20:
        for k in ("deliveries", "redeliveries", "accept", "release", "reject", "renew", "lock_expiries", "leaves",
                  "snapshots", "updates", "failovers", "coordinator_failovers", "coordinator_records_pruned"):
            assert totals.get(k, 0) > 0, f"the simulation never exercised {k}: {totals}"


def test_share_partition_simulation_is_deterministic():
    assert Sim(5).run() == Sim(5).run()
