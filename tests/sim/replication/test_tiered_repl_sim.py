"""Seeded simulation: an empty replica joins a tiered partition under faults (see tiered_repl_sim.py).

KIP-1023 (follower.fetch.last.tiered.offset.enable) on, and off as the control; KIP-1303's
eligibility on and off.  TIERLOG_SIM_SEED=<n> replays one seed;
TIERLOG_TIERED_REPL_SIM_SEEDS=<n> changes how many run per combination.
"""
from __future__ import annotations

import os
import time

import pytest
from tiered_repl_sim import TieredReplSim

_SEEDS = int(os.environ.get("TIERLOG_TIERED_REPL_SIM_SEEDS", "16"))
_ONE = os.environ.get("TIERLOG_SIM_SEED")
SEEDS = [int(_ONE)] if _ONE is not None else list(range(_SEEDS))


def _run(seed: int, kip1023: bool, kip1303: bool) -> TieredReplSim:
    sim = TieredReplSim(seed, kip1023=kip1023, kip1303=kip1303)
    try:
        sim.run()
    except AssertionError as e:
        raise AssertionError(f"tiered replication sim failed: SEED={seed} kip1023={kip1023} kip1303={kip1303} "
                             f"(replay: TIERLOG_SIM_SEED={seed}) at t={sim.now}: {e}") from e
    return sim


@pytest.mark.parametrize("kip1303", [False, True], ids=["kip1303-off", "kip1303-on"])
@pytest.mark.parametrize("kip1023", [True, False], ids=["kip1023-on", "kip1023-off"])
def test_an_empty_replica_joins_a_tiered_partition_under_faults(kip1023, kip1303):
    """It reaches the ISR, its log from its local log start is the leader's, its epoch cache agrees
    over [log start, HW), and no acknowledged record becomes unreadable after any election."""
    totals: dict[str, int] = {}
    started = time.monotonic()
    for seed in SEEDS:
        sim = _run(seed, kip1023, kip1303)
        for k, v in sim.stats.items():
            totals[k] = totals.get(k, 0) + v
    print(f"\ntiered replication sim (kip1023={kip1023}, kip1303={kip1303}): {len(SEEDS)} seeds in "
          f"{time.monotonic() - started:.1f}s: {totals}")
    if len(SEEDS) >= 16:        # the paths the invariants are about were taken
        for k in ("crashes", "power_losses", "elections", "uploads", "remote_deletes", "local_deletes",
                  "kip405_rebuilds", "new_joined_isr", "truncations", "delete_records"):
            assert totals[k] > 0, (k, totals)
        if not kip1303:         # with KIP-1303 on, a freshly rebuilt replica rarely may lead
            assert totals["new_replica_led"] > 0, totals
        if kip1023:
            assert totals["probes"] > 0 and totals["kip1023_rebuilds"] > 0, totals
        else:
            assert totals["probes"] == totals["kip1023_rebuilds"] == 0, totals
            assert totals["out_of_range"] > 0, totals


def test_in_kafkas_gap_case_kip1023_copies_only_the_tail():
    """local.retention.bytes = -1 (log start == local log start, segments uploaded): with the
    config on the empty replica copies less than with it off, which copies everything."""
    def copied(seed: int, kip1023: bool) -> tuple[int, int]:
        sim = TieredReplSim(seed, kip1023=kip1023, local_retention_bytes=-1)
        sim.run()
        return sim.stats["new_replica_copied"], sim.stats["kip1023_rebuilds"]
    for seed in range(3):
        (on, rebuilds), (off, _) = copied(seed, True), copied(seed, False)
        assert rebuilds > 0 and on < off, (seed, on, off)
