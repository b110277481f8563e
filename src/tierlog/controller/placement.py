"""Replica placement: which brokers hold each new partition, and which leads.

Rack-aware striping, the behaviour of Kafka's StripedReplicaPlacer (our own
code): only *usable* brokers (registered, unfenced, not in controlled shutdown)
receive replicas; the replicas of one partition sit on distinct racks while
there are racks left; the first replica (the preferred leader) rotates over
every usable broker, so over many partitions each broker leads the same number
to within one; followers shift with every full rotation so that the same pair
of brokers is not always together.  A broker without ``broker.rack`` is its
own rack.  The order of racks and of brokers inside a rack comes from the
injected ``random.Random``, so a placement is reproducible from a seed.

Manual assignments (CreateTopics ``Assignments``) are checked by
``validate_assignment``.  Refusals raise ``PlacementError`` with Kafka's codes
(INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tierlog.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from tierlog.protocol.typed.create_topics import CreatableReplicaAssignment

__all__ = ["PlacementError", "UsableBroker", "place", "validate_assignment"]


@dataclass(frozen=True, slots=True)
class UsableBroker:
    node_id: int
    rack: str | None = None


class PlacementError(Exception):
    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code


def place(brokers: list[UsableBroker], num_partitions: int, replication_factor: int,
          rng: random.Random) -> list[tuple[int, ...]]:
    """Replica lists (preferred leader first) for ``num_partitions`` new partitions."""
    if replication_factor < 1:
        raise PlacementError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be at least 1.")
    if not brokers:
        raise PlacementError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "No usable broker: every registered broker is fenced or shutting down.")
    if replication_factor > len(brokers):
        raise PlacementError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"Unable to replicate the partition {replication_factor} time(s): only "
                             f"{len(brokers)} usable broker(s) are registered.")
    order, rack_of = _striped_order(brokers, rng)
    start = rng.randrange(len(order))
    return [_one(order, rack_of, start + p, p // len(order), replication_factor)
            for p in range(num_partitions)]


def _striped_order(brokers: list[UsableBroker], rng: random.Random) -> tuple[list[int], dict[int, object]]:
    """Brokers interleaved rack by rack: r0[0], r1[0], r2[0], r0[1], ...

    Consecutive entries are on different racks as long as every rack still has
    brokers, which is what lets ``_one`` find distinct racks quickly.
    """
    racks: dict[object, list[int]] = {}
    rack_of: dict[int, object] = {}
    for b in sorted(brokers, key=lambda b: b.node_id):
        key: object = b.rack if b.rack is not None else ("", b.node_id)     # no rack: a rack of its own
        racks.setdefault(key, []).append(b.node_id)
        rack_of[b.node_id] = key
    rack_keys = sorted(racks, key=repr)
    rng.shuffle(rack_keys)
    for key in rack_keys:
        rng.shuffle(racks[key])
    order: list[int] = []
    for i in range(max(len(v) for v in racks.values())):
        order.extend(racks[k][i] for k in rack_keys if i < len(racks[k]))
    return order, rack_of


def _one(order: list[int], rack_of: dict[int, object], leader_pos: int, shift: int, rf: int) -> tuple[int, ...]:
    n = len(order)
    leader = order[leader_pos % n]
    chosen, racks = [leader], {rack_of[leader]}
    # Followers: walk the ring from a shifted start; first pass wants new racks,
    # the second takes whatever is left.
    step_start = leader_pos + 1 + (shift % (n - 1) if n > 1 else 0)
    for distinct_racks in (True, False):
        for k in range(n):
            if len(chosen) == rf:
                return tuple(chosen)
            b = order[(step_start + k) % n]
            if b in chosen or (distinct_racks and rack_of[b] in racks):
                continue
            chosen.append(b)
            racks.add(rack_of[b])
    assert len(chosen) == rf, (chosen, rf)
    return tuple(chosen)


def validate_assignment(assignments: list[CreatableReplicaAssignment], registered: set[int]) -> dict[int, tuple[int, ...]]:
    """Check CreateTopics ``Assignments``; partition index -> replicas.

    Indexes must be 0..n-1 with no gap or repeat, every list non-empty, without
    duplicate brokers, all of one length, and naming registered brokers only.
    """
    out: dict[int, tuple[int, ...]] = {}
    for a in assignments:
        index, replicas = a["PartitionIndex"], tuple(a["BrokerIds"])
        if index in out:
            raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Partition index {index} appears more than once in the assignment.")
        if not replicas:
            raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Partition {index} has an empty replica list.")
        if len(set(replicas)) != len(replicas):
            raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Partition {index} lists a broker more than once: {list(replicas)}.")
        unknown = [r for r in replicas if r not in registered]
        if unknown:
            raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Partition {index} names unregistered broker(s) {unknown}.")
        out[index] = replicas
    if sorted(out) != list(range(len(out))):
        raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Partition indexes must be 0..{len(out) - 1} with no gap: {sorted(out)}.")
    if len({len(r) for r in out.values()}) > 1:
        raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "All partitions of a manual assignment must have the same replication factor.")
    return out
