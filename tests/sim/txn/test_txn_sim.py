"""Seeded simulation of transactions (txn_sim.py: the model; txn_invariants.py: the rules).

TIERLOG_SIM_SEED=<n> replays one seed; TIERLOG_TXN_SIM_SEEDS=<n> changes how many run (200 in the
suite, about 6 s of one core; run 2,000 or more before changing a transaction core).
"""
from __future__ import annotations

import os
import re
import time

import pytest
from txn_sim import BUGS, Sim, SimFailure

_SEEDS = int(os.environ.get("TIERLOG_TXN_SIM_SEEDS", "200"))
_ONE = os.environ.get("TIERLOG_SIM_SEED")
SEEDS = [int(_ONE)] if _ONE is not None else list(range(_SEEDS))
BUG_SEEDS = range(40)           # each deliberate bug is caught within these


def test_transaction_simulation_all_seeds():
    totals: dict[str, int] = {}
    started = time.process_time()
    for seed in SEEDS:
        for k, v in Sim(seed).run().items():
            totals[k] = totals.get(k, 0) + v
    print(f"\ntxn sim: {len(SEEDS)} seeds in {time.process_time() - started:.1f} s of CPU: {totals}")
    assert totals["commits"] > 0 and totals["aborts"] > 0
    if len(SEEDS) >= 100:
        for k in ("abortable", "fenced", "failovers", "pauses", "zombies", "crashes", "timeouts",
                  "fenced_offset_commits", "stale_markers"):
            assert totals[k] > 0, f"the faults never exercised {k}: {totals}"


def test_transaction_simulation_is_deterministic():
    assert Sim(3).run() == Sim(3).run()


def test_without_faults_every_transaction_ends_as_its_client_asked():
    stats = Sim(12345, faults=False).run()
    assert stats["commits"] > 10 and stats["aborts"] > 0
    assert stats["abortable"] == stats["fenced"] == stats["failovers"] == stats["timeouts"] == 0


def _first_failure(bug: str) -> str:
    for seed in BUG_SEEDS:
        try:
            Sim(seed, bugs=frozenset({bug})).run()
        except SimFailure as e:
            return str(e)
    raise AssertionError(f"no seed of {BUG_SEEDS} caught the bug {bug!r}: {BUGS[bug]}")


@pytest.mark.parametrize(("bug", "caught"), [
    ("no_abort_index", "read_committed returned .* of aborted transaction"),          # 1. no aborted read
    ("bad_marker", "a (COMMIT|ABORT) marker at .* ended transaction .* decided"),    # 2. markers carry the decision
    ("index_commits", "torn transaction"),                                            # 3. atomic visibility
    ("offsets_at_once", "offset .* applied; its transaction"),                        # 4. offsets with the commit
    ("no_epoch_check", "a write of fenced producer|ended transaction .* undecided"),  # 5. fenced writes
    ("no_verification", "joined the open transaction"),                               # 5. one transaction's data
    ("stale_hw", "the LSO went back"),                                                # 6. monotonic LSO
    ("early_end_answer", "was told transaction .* (committed|aborted); decided"),     # 7. what clients are told
])
def test_each_invariant_catches_a_deliberate_bug(bug, caught):
    failure = _first_failure(bug)
    assert re.search(caught, failure), failure


def test_found_a_late_txn_offset_commit_of_a_fenced_epoch():
    """Found by this simulation: a TxnOffsetCommit delayed until its transaction's marker had
    reached the offsets partition was appended (the producer state checked no epoch of a batch
    without a sequence) and its offsets waited for the producer's next COMMIT marker."""
    with pytest.raises(SimFailure, match="__consumer_offsets.*a write of fenced producer"):
        Sim(17, bugs=frozenset({"offsets_epoch_unchecked"})).run()
    assert Sim(17).run()["fenced_offset_commits"] > 0


def test_found_a_late_marker_copy_ending_the_next_transaction():
    """Found by this simulation (Kafka's KIP-1228): a stalled copy of transaction N's COMMIT marker,
    at the epoch N's end bumped to, reached a partition where transaction N+1 was open at that same
    epoch, and ended it with N's outcome before it was decided."""
    with pytest.raises(SimFailure, match="ended transaction .* which is undecided"):
        Sim(381, bugs=frozenset({"marker_version_ignored"})).run()
    assert Sim(381).run()["stale_markers"] > 0
