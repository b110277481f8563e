"""Seeded simulation of the group coordinator (see group_sim.py for the model and invariants).

TIERLOG_SIM_SEED=<n> replays one seed; TIERLOG_SIM_SEEDS=<n> changes how many run
(250 by default; even seeds: the classic protocol, odd: KIP-848).
"""
from __future__ import annotations

import os
import time

import pytest
from group_sim import Sim, SimFailure

_SEEDS = int(os.environ.get("TIERLOG_SIM_SEEDS", "250"))     # 13 s of CPU on this machine; more for a soak
_ONE = os.environ.get("TIERLOG_SIM_SEED")
SEEDS = [int(_ONE)] if _ONE is not None else list(range(_SEEDS))


def _run(seed: int, **kw) -> dict:
    return Sim(seed, **kw).run()        # a failure raises SimFailure("SEED=<n> ...")


def test_group_simulation_all_seeds():
    totals: dict[str, int] = {}
    started = time.monotonic()
    for seed in SEEDS:
        for k, v in _run(seed).items():
            totals[k] = totals.get(k, 0) + v
    print(f"\ngroup sim: {len(SEEDS)} seeds in {time.monotonic() - started:.1f}s: {totals}")
    assert totals["commits_ok"] > 0
    if len(SEEDS) >= 20:
        for k in ("crashes", "leaves", "pauses", "failovers", "lost_records", "resets_ok", "revocations",
                  "rebalances", "refused_writes", "write_timeouts"):
            assert totals[k] > 0, f"the faults never exercised {k}: {totals}"


def test_group_simulation_is_deterministic():
    assert _run(3) == _run(3)
    assert _run(4) == _run(4)


def test_group_simulation_catches_answers_sent_before_their_state_is_committed():
    """The bug this simulation found: the shell sent answers without records at once, so a
    follower's SyncGroup in Stable got an assignment whose record was still uncommitted; after a
    failover lost it, the generation was handed out again with another assignment."""
    with pytest.raises(SimFailure, match="generation 7: .* already has"):
        _run(642, answers_wait_for_writes=False, write_faults=False)     # the seed's trajectory then
    _run(642)


def test_group_simulation_catches_a_refused_write_kept_in_memory():
    """Found by this simulation once it refused writes: the shell answered a refused write with
    an error but its shard kept what the write changed, so a KIP-848 member was told to keep a
    partition the log (and any later coordinator) never gave it."""
    with pytest.raises(SimFailure, match="holds .* the coordinator does not give it"):
        _run(17, reload_after_refusal=False)
    _run(17)
