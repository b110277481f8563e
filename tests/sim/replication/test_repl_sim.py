"""Seeded simulation of one partition's replicas (see repl_sim.py for the model).

TIERLOG_SIM_SEED=<n> replays one seed; TIERLOG_SIM_SEEDS=<n> changes how many run (120 in the suite;
run 2,000 or more before changing the replication core).
"""
from __future__ import annotations

import os
import time

import pytest
from repl_sim import Sim

_SEEDS = int(os.environ.get("TIERLOG_SIM_SEEDS", "120"))
_ONE = os.environ.get("TIERLOG_SIM_SEED")
SEEDS = [int(_ONE)] if _ONE is not None else list(range(_SEEDS))


def _run(seed: int, kip1303: bool = False) -> Sim:
    sim = Sim(seed, kip1303=kip1303)
    try:
        sim.run()
    except AssertionError as e:
        raise AssertionError(f"replication sim failed: SEED={seed} kip1303={kip1303} (replay: "
                             f"TIERLOG_SIM_SEED={seed}) at t={sim.now}: {e}") from e
    return sim


@pytest.mark.parametrize("kip1303", [False, True], ids=["kip1303-off", "kip1303-on"])
def test_replication_simulation_all_seeds(kip1303):
    """Every acknowledged record stays readable after every election, with KIP-1303's
    eligibility sort on (leader.election.eligible.local.log.ms) and off."""
    totals: dict[str, int] = {}
    started = time.monotonic()
    for seed in SEEDS:
        sim = _run(seed, kip1303)
        for k, v in sim.stats.items():
            totals[k] = totals.get(k, 0) + v
    print(f"\nreplication sim (kip1303={kip1303}): {len(SEEDS)} seeds in {time.monotonic() - started:.1f}s: "
          f"{totals}")
    assert totals["acked"] > 0
    if len(SEEDS) > 20:
        for k in ("crashes", "power_losses", "leader_moves", "truncations", "elections", "alter_partitions",
                  "local_deletions"):
            assert totals[k] > 0, f"the faults never exercised {k}"
        # on: the eligibility sort really changed elections; off: it never may
        assert (totals["ineligible_passed_over"] > 0) == kip1303, totals


def test_replication_simulation_without_faults_acks_everything():
    sim = Sim(12345, faults=False)
    sim.run(fault_ms=500, heal_ms=500)
    assert sim.stats["produce_errors"] == 0
    assert sim.stats["acked"] == sim.values


@pytest.mark.parametrize("seed", [1, 2])
def test_replication_simulation_is_deterministic(seed):
    a, b = Sim(seed), Sim(seed)
    a.run(fault_ms=600, heal_ms=600)
    b.run(fault_ms=600, heal_ms=600)
    assert a.stats == b.stats and a.committed == b.committed
