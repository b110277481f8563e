"""Server-side partition assignors of the consumer protocol (KIP-848): ``uniform`` and ``range``.

An assignor gets, per member, the topic ids it subscribes to and its current
target assignment, and the partition count of every subscribed topic; it
answers each member's new target assignment {topic id: partitions}.  Every
partition of a subscribed topic goes to exactly one member subscribed to it
(none when no member subscribes).

- ``uniform`` (the default, Kafka's UniformAssignor): balanced and sticky.  A
  member keeps the partitions of its previous target that it still
  subscribes to; free partitions go one by one to the least loaded member
  subscribed to their topic; then, while a partition's owner holds at least
  two more partitions than another member subscribed to its topic, the
  partition moves.  With identical subscriptions every member ends with
  floor(P/M) or ceil(P/M) partitions, moving as few as that allows.
- ``range`` (Kafka's RangeAssignor): per topic, its subscribed members sorted
  by member id get consecutive ranges; the first P % M get one extra.  Members
  with the same subscriptions get the same partition numbers of every topic
  (co-partitioned joins).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ASSIGNORS", "MemberSpec", "range_assign", "uniform_assign"]

Assignment = dict[bytes, frozenset[int]]


@dataclass(frozen=True)
class MemberSpec:
    subscribed: frozenset[bytes]                                        # topic ids
    current: Mapping[bytes, frozenset[int]] = field(default_factory=dict)   # previous target assignment


def range_assign(members: Mapping[str, MemberSpec], topics: Mapping[bytes, int]) -> dict[str, Assignment]:
    out: dict[str, dict[bytes, set[int]]] = {m: {} for m in members}
    for tid, count in sorted(topics.items()):
        subscribers = sorted(m for m, spec in members.items() if tid in spec.subscribed)
        if not subscribers:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            n = quota + (1 if i < extra else 0)
            if n:
                out[m][tid] = set(range(start, start + n))
            start += n
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}


def uniform_assign(members: Mapping[str, MemberSpec], topics: Mapping[bytes, int]) -> dict[str, Assignment]:
    owner: dict[tuple[bytes, int], str] = {}
    load = {m: 0 for m in members}
    for m in sorted(members):                       # keep what is still valid (sticky)
        spec = members[m]
        for tid, parts in spec.current.items():
            if tid not in spec.subscribed or tid not in topics:
                continue
            for p in sorted(parts):
                if p < topics[tid] and (tid, p) not in owner:
                    owner[(tid, p)] = m
                    load[m] += 1
    subscribers = {tid: sorted(m for m, s in members.items() if tid in s.subscribed) for tid in topics}
    for tid, count in sorted(topics.items()):       # free partitions to the least loaded subscriber
        for p in range(count):
            if (tid, p) not in owner and subscribers[tid]:
                m = min(subscribers[tid], key=lambda x: (load[x], x))
                owner[(tid, p)] = m
                load[m] += 1
    _balance(owner, load, subscribers)
    out: dict[str, dict[bytes, set[int]]] = {m: {} for m in members}
    for (tid, p), m in owner.items():
        out[m].setdefault(tid, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}


def _balance(owner: dict[tuple[bytes, int], str], load: dict[str, int], subscribers: dict[bytes, list[str]]) -> None:
    """Move partitions from heavier to lighter members (by >= 2) until none can move.
    Each move lowers the sum of squared loads, so this ends."""
    moved = True
    while moved:
        moved = False
        for tp in sorted(owner, key=lambda tp: (-load[owner[tp]], tp[0], -tp[1])):
            m = owner[tp]
            lighter = min(subscribers[tp[0]], key=lambda x: (load[x], x))
            if load[lighter] + 2 <= load[m]:
                owner[tp] = lighter
                load[m] -= 1
                load[lighter] += 1
                moved = True
                break


ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}
