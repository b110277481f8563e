"""Automatic leader balancing (``auto.leader.rebalance.enable``): pure rules.

Every ``leader.imbalance.check.interval.seconds`` the active controller looks
for partitions not led by their preferred replica and writes preferred leader
elections for some of them (``QuorumController.tick``).

*Preferred replica*: the first replica of the assignment after KIP-1303's
eligibility sort (a replica without enough local log is not preferred while
an eligible one exists), the replica ElectLeaders' PREFERRED election picks.
KIP-1303 "Broker 3 ... becomes eligible and the auto leader rebalancer
restores rack-balanced leadership" relies on this being the same order.

*Imbalance ratio* of a broker: the partitions it is the preferred replica of
but does not lead, over the partitions it is the preferred replica of.

A partition is *balanced* (a preferred election is written for it) when
  1. its preferred replica's imbalance ratio is above
     ``leader.imbalance.per.broker.percentage`` / 100 (the ZooKeeper
     controller's rule; Kafka's KRaft controller ignores the percentage and
     balances every imbalanced partition: we keep the documented knob);
  2. its preferred replica does not lead it, is in the ISR and is usable
     (registered, unfenced, not shutting down): a preferred election must
     never be unclean;
  3. no reassignment is under way (adding or removing replicas): the
     reassignment decides its leader.

Limits: one check scans every partition (O(partitions); 50-70 ms per 100k
partitions here, a second scan only when some partition is a candidate); at most
``MAX_ELECTIONS_PER_CHECK`` elections are written per check, and a check that
left candidates behind asks for the next one at once (Kafka's
maxElectionsPerImbalance, also 1000).

:class:`BalanceSchedule` is the timer: disabled, it never fires; enabled, it
fires ``interval_ms`` after it is started (the controller became active) and
then every ``interval_ms``, or at once after a truncated check.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tierlog.metadata.cluster_records import NO_LEADER
from tierlog.metadata.image import MetadataImage, PartitionInfo, TopicInfo
from tierlog.metadata.leader_election import EligibilityThresholds, eligibility_sort

__all__ = ["MAX_ELECTIONS_PER_CHECK", "BalanceSchedule", "imbalance_ratios", "partitions_to_balance",
           "preferred_replica"]

MAX_ELECTIONS_PER_CHECK = 1000
#: a topic's KIP-1303 thresholds
ThresholdsOf = Callable[[TopicInfo], EligibilityThresholds]


def preferred_replica(part: PartitionInfo, thresholds: EligibilityThresholds, now_ms: int) -> int:
    """The replica a PREFERRED election picks (KIP-1303 eligibility-sorted first), or -1."""
    if not thresholds.enabled:
        return part.replicas[0] if part.replicas else NO_LEADER
    order = eligibility_sort(part.replicas, part.coverage(), thresholds, now_ms)
    return order[0] if order else NO_LEADER


def imbalance_ratios(pairs: Iterable[tuple[int, int]]) -> dict[int, float]:
    """Per preferred broker, from (preferred, leader) pairs: share of its partitions it does not lead."""
    preferred_count: dict[int, int] = {}
    not_leading: dict[int, int] = {}
    for preferred, leader in pairs:
        if preferred == NO_LEADER:
            continue
        preferred_count[preferred] = preferred_count.get(preferred, 0) + 1
        if leader != preferred:
            not_leading[preferred] = not_leading.get(preferred, 0) + 1
    return {b: not_leading.get(b, 0) / n for b, n in preferred_count.items()}


def partitions_to_balance(image: MetadataImage, percentage: int, thresholds_of: ThresholdsOf, now_ms: int,
                          limit: int = MAX_ELECTIONS_PER_CHECK) -> tuple[dict[str, list[int]], bool]:
    """(topic -> partitions to elect their preferred leader, whether candidates were left out by ``limit``).

    ``thresholds_of(topic)`` gives a topic's KIP-1303 thresholds.
    """
    candidates = _candidates(image, thresholds_of, now_ms)
    if not candidates:                          # the common case: one pass, nothing kept
        return {}, False
    ratios = imbalance_ratios(_preferred_and_leader(image, thresholds_of, now_ms))
    plan: dict[str, list[int]] = {}
    chosen = 0
    for name, index, preferred in candidates:
        if ratios[preferred] * 100 <= percentage:
            continue
        if chosen == limit:
            return plan, True
        plan.setdefault(name, []).append(index)
        chosen += 1
    return plan, False


def _candidates(image: MetadataImage, thresholds_of: ThresholdsOf, now_ms: int) -> list[tuple[str, int, int]]:
    """(topic, partition, preferred) of partitions whose preferred replica could lead but does not."""
    out = []
    usable = image.usable_brokers()
    for topic in image.topics.values():
        thresholds = thresholds_of(topic)
        for part in topic.partitions:
            if part.leader == (preferred := preferred_replica(part, thresholds, now_ms)):
                continue
            if (preferred in part.isr and preferred in usable
                    and not part.adding_replicas and not part.removing_replicas):
                out.append((topic.name, part.partition, preferred))
    return out


def _preferred_and_leader(image: MetadataImage, thresholds_of: ThresholdsOf, now_ms: int) -> Iterator[tuple[int, int]]:
    for topic in image.topics.values():
        thresholds = thresholds_of(topic)
        for part in topic.partitions:
            yield preferred_replica(part, thresholds, now_ms), part.leader


@dataclass(slots=True)
class BalanceSchedule:
    """When the next leader balance check is due (None: not scheduled)."""

    enabled: bool
    interval_ms: int
    next_ms: int | None = None

    def start(self, now_ms: int) -> None:
        """(Re)start the timer: the first check one interval from now."""
        self.next_ms = now_ms + self.interval_ms if self.enabled else None

    def stop(self) -> None:
        self.next_ms = None

    def due(self, now_ms: int) -> bool:
        return self.next_ms is not None and now_ms >= self.next_ms

    def checked(self, now_ms: int, truncated: bool) -> None:
        """A check ran; the next is one interval away, or immediate if it left candidates behind."""
        self.next_ms = now_ms if truncated else now_ms + self.interval_ms
