from tierlog.metadata.cluster_records import ReplicaLogCoverage as Cov
from tierlog.metadata.leader_election import (
    Election,
    EligibilityThresholds,
    elect_leader,
    eligibility_sort,
    is_eligible,
    remove_from_isr,
)

NOW = 10_000_000
MS = EligibilityThresholds(local_log_ms=600_000)
BYTES = EligibilityThresholds(local_log_bytes=1000)
BOTH = EligibilityThresholds(600_000, 1000)


def cov(broker, age_ms=-1, size=-1):
    return Cov(broker, NOW - age_ms if age_ms >= 0 else -1, size)


# -- eligibility -------------------------------------------------------------------

def test_disabled_everyone_eligible():
    assert is_eligible(cov(1, 0, 0), EligibilityThresholds(), NOW)
    assert is_eligible(cov(1, 0, 0), EligibilityThresholds(-1, 0), NOW)


def test_time_based():
    # KIP-1303 "currentTime - localLogStartTimestamp >= threshold"
    assert is_eligible(cov(1, 3_600_000), MS, NOW)
    assert is_eligible(cov(1, 600_000), MS, NOW)
    assert not is_eligible(cov(1, 180_000), MS, NOW)


def test_bytes_based():
    # KIP-1303 "localLogSizeBytes >= leader.election.eligible.local.log.bytes"
    assert is_eligible(cov(1, size=1000), BYTES, NOW)
    assert not is_eligible(cov(1, size=999), BYTES, NOW)


def test_either_condition():
    # KIP-1303 "When both are set, a replica becomes eligible when EITHER condition is met"
    assert is_eligible(cov(1, 0, 5000), BOTH, NOW)
    assert is_eligible(cov(1, 3_600_000, 0), BOTH, NOW)
    assert not is_eligible(cov(1, 0, 0), BOTH, NOW)


def test_unknown_is_eligible():
    # KIP-1303 "Replicas with unknown local log state ... are treated as eligible"
    assert is_eligible(None, BOTH, NOW)
    assert is_eligible(Cov(1), BOTH, NOW)


def test_stable_sort():
    # KIP-1303 "Among eligible replicas, the original assignment order is preserved.
    # Among non-eligible replicas, the original assignment order is also preserved."
    c = {1: cov(1, 0), 2: cov(2, 3_600_000), 3: cov(3, 0), 4: cov(4, 1_800_000)}
    assert eligibility_sort((1, 2, 3, 4), c, MS, NOW) == (2, 4, 1, 3)
    assert eligibility_sort((1, 2, 3, 4), c, EligibilityThresholds(), NOW) == (1, 2, 3, 4)


def test_kip_example():
    # KIP-1303 example: broker 1 1h, broker 2 30 min, broker 3 3 min -> 3 deprioritized
    c = {1: cov(1, 3_600_000), 2: cov(2, 1_800_000), 3: cov(3, 180_000)}
    assert eligibility_sort((3, 1, 2), c, MS, NOW) == (1, 2, 3)


# -- any-leader election ----------------------------------------------------------------

def test_keep_current_leader_if_valid():
    r = elect_leader(replicas=(1, 2, 3), isr=(1, 2, 3), leader=2, usable={1, 2, 3})
    assert r.leader == 2 and r.isr == (1, 2, 3)


def test_keep_valid_leader_even_if_ineligible():
    # KIP-1303 sorts the candidates; it does not unseat a valid current leader
    c = {2: cov(2, 0)}
    r = elect_leader(replicas=(1, 2, 3), isr=(1, 2, 3), leader=2, usable={1, 2, 3},
                     coverage=c, thresholds=MS, now_ms=NOW)
    assert r.leader == 2


def test_first_valid_in_assignment_order():
    r = elect_leader(replicas=(1, 2, 3), isr=(3, 2), leader=-1, usable={2, 3})
    assert r.leader == 2


def test_any_election_prefers_eligible():
    # KIP-1303 "eligible replicas (those meeting the local log threshold) are preferred"
    c = {2: cov(2, 1000), 3: cov(3, 3_600_000)}
    r = elect_leader(replicas=(1, 2, 3), isr=(2, 3), leader=-1, usable={2, 3},
                     coverage=c, thresholds=MS, now_ms=NOW)
    assert r.leader == 3


def test_ineligible_never_blocks():
    # KIP-1303: leader election succeeds when only non-eligible replicas are available
    c = {2: cov(2, 1000), 3: cov(3, 1000)}
    r = elect_leader(replicas=(1, 2, 3), isr=(2, 3), leader=-1, usable={2, 3},
                     coverage=c, thresholds=MS, now_ms=NOW)
    assert r.leader == 2


def test_unknown_coverage_treated_as_eligible_in_election():
    # KIP-1303 "treated as eligible": 2 unknown beats 3 known-ineligible
    c = {3: cov(3, 1000)}
    r = elect_leader(replicas=(3, 2), isr=(3, 2), leader=-1, usable={2, 3},
                     coverage=c, thresholds=MS, now_ms=NOW)
    assert r.leader == 2


def test_no_valid_leader_no_unclean():
    r = elect_leader(replicas=(1, 2, 3), isr=(1,), leader=-1, usable={2, 3})
    assert r.leader == -1 and r.isr == (1,) and not r.unclean


def test_unclean_elects_first_live_replica():
    r = elect_leader(replicas=(1, 2, 3), isr=(1,), leader=-1, usable={3, 2},
                     unclean_allowed=True)
    assert r.leader == 2 and r.isr == (2,) and r.unclean and r.elr == ()


def test_unclean_election_type():
    r = elect_leader(replicas=(1, 2), isr=(1,), leader=-1, usable={2},
                     election=Election.UNCLEAN)
    assert r.leader == 2 and r.unclean


def test_unclean_uses_eligibility_order():
    c = {2: cov(2, 10), 3: cov(3, 3_600_000)}
    r = elect_leader(replicas=(1, 2, 3), isr=(1,), leader=-1, usable={2, 3},
                     unclean_allowed=True, coverage=c, thresholds=MS, now_ms=NOW)
    assert r.leader == 3


# -- ELR (KIP-966) -----------------------------------------------------------------------

def test_elr_used_when_isr_empty():
    r = elect_leader(replicas=(1, 2, 3), isr=(), elr=(2, 3), leader=-1, usable={3})
    # a leader chosen from the ELR makes the ISR just itself
    assert r.leader == 3 and r.isr == (3,) and r.elr == (2,)


def test_elr_ignored_when_isr_not_empty():
    r = elect_leader(replicas=(1, 2, 3), isr=(1,), elr=(2,), leader=-1, usable={2})
    assert r.leader == -1


def test_elr_eligibility_sort():
    # KIP-1303 "the same local log eligibility preference will apply to ELR members"
    c = {2: cov(2, 10), 3: cov(3, 3_600_000)}
    r = elect_leader(replicas=(1, 2, 3), isr=(), elr=(2, 3), leader=-1, usable={2, 3},
                     coverage=c, thresholds=MS, now_ms=NOW)
    assert r.leader == 3 and r.isr == (3,) and r.elr == (2,)


def test_last_known_leader():
    r = elect_leader(replicas=(1, 2, 3), isr=(), elr=(), last_known_elr=(2,), leader=-1,
                     usable={2, 3})
    assert r.leader == 2 and r.isr == (2,) and r.last_known_elr == ()


def test_remove_from_isr_moves_last_member_to_elr():
    assert remove_from_isr((1, 2), (), 1) == ((2,), ())
    assert remove_from_isr((2,), (), 2) == ((), (2,))
    assert remove_from_isr((1, 2), (), 3) == ((1, 2), ())


def test_remove_from_isr_min_isr():
    assert remove_from_isr((1, 2, 3), (), 1, min_isr=2) == ((2, 3), ())
    assert remove_from_isr((2, 3), (), 2, min_isr=2) == ((3,), (2,))
    assert remove_from_isr((3,), (2,), 3, min_isr=2) == ((), (2, 3))


# -- preferred -------------------------------------------------------------------------------

def test_preferred_elects_first_replica():
    r = elect_leader(replicas=(1, 2, 3), isr=(1, 2, 3), leader=2, usable={1, 2, 3},
                     election=Election.PREFERRED)
    assert r.leader == 1


def test_preferred_sorted_by_eligibility():
    # KIP-1303 "the preferred leader election will sort replicas by eligibility
    # before selecting the preferred replica"
    c = {1: cov(1, 10)}
    r = elect_leader(replicas=(1, 2, 3), isr=(1, 2, 3), leader=3, usable={1, 2, 3},
                     election=Election.PREFERRED, coverage=c, thresholds=MS, now_ms=NOW)
    assert r.leader == 2


def test_preferred_keeps_current_when_preferred_invalid():
    r = elect_leader(replicas=(1, 2, 3), isr=(2, 3), leader=3, usable={1, 2, 3},
                     election=Election.PREFERRED)
    assert r.leader == 3


def test_preferred_falls_back_to_next_valid():
    r = elect_leader(replicas=(1, 2, 3), isr=(3,), leader=-1, usable={2, 3},
                     election=Election.PREFERRED)
    assert r.leader == 3


def test_preferred_never_unclean():
    r = elect_leader(replicas=(1, 2), isr=(1,), leader=-1, usable={2},
                     election=Election.PREFERRED, unclean_allowed=True)
    assert r.leader == -1
