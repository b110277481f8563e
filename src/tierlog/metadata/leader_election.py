"""Partition leader election: pure functions, Kafka's PartitionChangeBuilder rules.

Inputs are a partition state (replicas, ISR, ELR, last known ELR, leader,
per-replica local log coverage), the set of *usable* brokers (registered,
unfenced, not in controlled shutdown), the election type and the KIP-1303
thresholds; the output is an :class:`ElectionResult` (leader, ISR, ELR, ...).
Nothing here reads a clock or the network: ``now_ms`` is passed in.

Rules
-----
*Valid leader* (Kafka): a usable replica that is in the ISR, or, when the ISR
is empty, in the ELR (KIP-966).

ANY (online) election, in order:
  1. keep the current leader if it is still valid;
  2. else the first valid replica in assignment order, after the KIP-1303
     eligibility sort;
  3. else the last known leader: ISR and ELR empty and a usable member of
     ``last_known_elr`` (KIP-966's last-known-ELR case);
  4. else, if unclean election is allowed, the first usable replica in
     assignment order (after the eligibility sort): ISR becomes just it, ELR and
     last known ELR are cleared, recovery state RECOVERING;
  5. else no leader (-1).

PREFERRED election: the first replica of the eligibility-sorted assignment if
valid; else keep the current leader if valid; else the next valid replica in
that order; else no leader. (Never unclean.)

A leader taken from the ELR (ISR empty) makes the ISR just itself and leaves
the ELR (KIP-966).

KIP-1303: when ``leader.election.eligible.local.log.ms`` or ``.bytes`` is > 0,
the candidate order is the assignment order stably sorted so that eligible
replicas come first; a replica is eligible if its local log covers at least
the time span or at least the bytes (either suffices); a replica with unknown
coverage is eligible; an ineligible replica is still elected when no eligible
one is valid (never blocks an election).

ISR shrink (fence / controlled shutdown), :func:`remove_from_isr`: the broker
leaves the ISR. KIP-966 kept simple: if the ISR is left with fewer than
``min_isr`` (topic ``min.insync.replicas``, default 1) members, the removed
broker joins the ELR (it had every committed record); once the ISR is back at
``min_isr`` or more the ELR is cleared. With the default min ISR of 1 this is
exactly "when the ISR would become empty, its last member moves to the ELR".
"""
from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from .cluster_records import NO_LEADER, ReplicaLogCoverage

__all__ = [
    "NO_LEADER",
    "Election",
    "ElectionResult",
    "EligibilityThresholds",
    "elect_leader",
    "eligibility_sort",
    "is_eligible",
    "remove_from_isr",
]


class Election(enum.Enum):
    PREFERRED = "preferred"
    ANY = "any"            # Kafka's ONLINE: any valid leader, unclean if allowed
    UNCLEAN = "unclean"    # ANY with unclean election forced on


@dataclass(frozen=True, slots=True)
class EligibilityThresholds:
    """``leader.election.eligible.local.log.ms`` / ``.bytes``; <= 0 disables each."""

    local_log_ms: int = -1
    local_log_bytes: int = -1

    @property
    def enabled(self) -> bool:
        return self.local_log_ms > 0 or self.local_log_bytes > 0


DISABLED = EligibilityThresholds()


@dataclass(frozen=True, slots=True)
class ElectionResult:
    leader: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    unclean: bool = False


def is_eligible(coverage: ReplicaLogCoverage | None, thresholds: EligibilityThresholds,
                now_ms: int) -> bool:
    """KIP-1303 eligibility of one replica."""
    if not thresholds.enabled:
        return True
    # KIP-1303 "Replicas with unknown local log state ... are treated as eligible"
    if coverage is None:
        return True
    ts, size = coverage.local_log_start_timestamp, coverage.local_log_size_bytes
    if ts < 0 and size < 0:
        return True
    # KIP-1303 "a replica becomes eligible when EITHER condition is met"
    if thresholds.local_log_ms > 0 and ts >= 0 and now_ms - ts >= thresholds.local_log_ms:
        return True
    return bool(thresholds.local_log_bytes > 0 and size >= 0 and size >= thresholds.local_log_bytes)


def eligibility_sort(replicas: Sequence[int], coverage: Mapping[int, ReplicaLogCoverage],
                     thresholds: EligibilityThresholds, now_ms: int) -> tuple[int, ...]:
    """KIP-1303 "stably sort targetReplicas such that eligible replicas ... are
    preferred over non-eligible replicas"; assignment order kept within each group."""
    if not thresholds.enabled:
        return tuple(replicas)
    flags = [is_eligible(coverage.get(r), thresholds, now_ms) for r in replicas]
    return (tuple(r for r, ok in zip(replicas, flags) if ok)
            + tuple(r for r, ok in zip(replicas, flags) if not ok))


def elect_leader(*, replicas: Sequence[int], isr: Sequence[int], leader: int,
                 usable: Collection[int], election: Election = Election.ANY,
                 elr: Sequence[int] = (), last_known_elr: Sequence[int] = (),
                 unclean_allowed: bool = False,
                 coverage: Mapping[int, ReplicaLogCoverage] | None = None,
                 thresholds: EligibilityThresholds = DISABLED,
                 now_ms: int = 0) -> ElectionResult:
    """Elect a leader for one partition (see the module docstring for the rules)."""
    isr, elr, lke = tuple(isr), tuple(elr), tuple(last_known_elr)
    order = eligibility_sort(replicas, coverage or {}, thresholds, now_ms)

    def valid(r: int) -> bool:
        if r not in usable:
            return False
        return r in isr if isr else r in elr

    if election is Election.PREFERRED:
        # KIP-1303 "the preferred leader election will sort replicas by eligibility
        # before selecting the preferred replica"
        if order and valid(order[0]):
            return _result(order[0], isr, elr, lke)
        if leader != NO_LEADER and valid(leader):
            return _result(leader, isr, elr, lke)
        for r in order[1:]:
            if valid(r):
                return _result(r, isr, elr, lke)
        return ElectionResult(NO_LEADER, isr, elr, lke)

    if leader != NO_LEADER and valid(leader):
        return _result(leader, isr, elr, lke)
    # KIP-1303: both election paths use the eligibility-sorted order
    for r in order:
        if valid(r):
            return _result(r, isr, elr, lke)
    if not isr and not elr:
        for r in lke:
            if r in usable and r in replicas:
                return ElectionResult(r, (r,), (), ())
    if unclean_allowed or election is Election.UNCLEAN:
        for r in order:
            if r in usable:
                return ElectionResult(r, (r,), (), (), unclean=True)
    return ElectionResult(NO_LEADER, isr, elr, lke)


def _result(new_leader: int, isr: tuple[int, ...], elr: tuple[int, ...], lke: tuple[int, ...]) -> ElectionResult:
    if not isr and new_leader in elr:
        # KIP-966: a leader chosen from the ELR makes the ISR just itself
        return ElectionResult(new_leader, (new_leader,),
                              tuple(r for r in elr if r != new_leader), lke)
    return ElectionResult(new_leader, isr, elr, lke)


def remove_from_isr(isr: Sequence[int], elr: Sequence[int], broker: int,
                    min_isr: int = 1) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(new ISR, new ELR) once ``broker`` leaves the ISR (KIP-966, simplified)."""
    isr, elr = tuple(isr), tuple(elr)
    if broker not in isr:
        return isr, elr
    new_isr = tuple(r for r in isr if r != broker)
    if len(new_isr) < max(min_isr, 1):
        if broker not in elr:
            elr = elr + (broker,)
    else:
        elr = ()
    return new_isr, elr
