"""Seeded simulation of the Raft quorum (see raft_sim.py).

CI runs TIERLOG_SIM_SEEDS seeds (default 500) in chunks; a failure names its
seed. Replay one: ``TIERLOG_SIM_SEED=123 pytest tests/sim -k raft``. Longer runs:
``python -m tests.sim.raft_soak --seeds 20000``.
"""

import os

import pytest
from raft_sim import params_for, run_seed

_ONE = os.environ.get("TIERLOG_SIM_SEED")
_COUNT = int(os.environ.get("TIERLOG_SIM_SEEDS", "500"))
_CHUNK = 50


def _chunks():
    if _ONE is not None:
        return [(int(_ONE), int(_ONE) + 1)]
    return [(lo, min(lo + _CHUNK, _COUNT)) for lo in range(0, _COUNT, _CHUNK)]


@pytest.mark.parametrize("lo,hi", _chunks())
def test_raft_sim_seeds(lo, hi):
    committed = 0
    for seed in range(lo, hi):
        stats = run_seed(seed, params_for(seed))  # raises SimFailure("SEED=<n> ...")
        committed += stats["committed"]
    assert committed > 0


def test_raft_sim_is_deterministic():
    assert run_seed(7) == run_seed(7)


def test_raft_sim_exercises_the_faults():
    totals: dict[str, int] = {}
    for seed in range(40):
        for k, v in run_seed(seed).items():
            totals[k] = totals.get(k, 0) + v
    for k in ("crashes", "partitions", "resigns", "drops", "dups", "snapshots-fetched",
              "diverging-truncations", "log-start-advances", "voter-adds", "voter-removes",
              "self-removals", "wipes"):
        assert totals[k] > 0, (k, totals)
