"""Reconciliation of one consumer-protocol member towards its target assignment (KIP-848), sans-IO.

A member's current assignment has an epoch, a state, the partitions it is
assigned, and the partitions pending revocation (it must give them up
before anyone else may get them).  Its states (Kafka's MemberState values,
as stored in the current assignment record):

- STABLE (0): the member has its epoch's assignment.  When the target
  assignment epoch is newer, the member moves on:
- UNREVOKED_PARTITIONS (1): it must first revoke partitions it holds that
  the target gives to others; it keeps its epoch and is told its assignment
  without them.  Once a heartbeat's owned partitions no longer include any of
  them (or the heartbeat omits its owned partitions and nothing is pending),
  it advances to epoch + 1 and is reconciled again.
- UNRELEASED_PARTITIONS (2): it has the target epoch but some of its target
  partitions are still owned (assigned or pending revocation) by another
  member; it gets them on a later heartbeat once they are free.

The next assignment (Kafka's CurrentAssignmentBuilder): assigned = previous
assigned ∩ target; pending revocation = previous assigned - target; to add =
target - assigned, minus partitions someone still owns (those are
unreleased).  If something must be revoked and the member still owns it ->
UNREVOKED_PARTITIONS at the same epoch; else the member takes the target
epoch with assigned ∪ to-add, STABLE or UNRELEASED_PARTITIONS.  A partition
therefore never has two owners: it moves only after its old owner revoked it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["STABLE", "UNRELEASED_PARTITIONS", "UNREVOKED_PARTITIONS", "CurrentAssignment", "reconcile"]

STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS = 0, 1, 2

Partitions = dict[bytes, frozenset[int]]


@dataclass(frozen=True)
class CurrentAssignment:
    epoch: int = 0
    previous_epoch: int = -1
    state: int = STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)

    def owned(self) -> Partitions:
        """Assigned and pending revocation: what no other member may get yet."""
        out = dict(self.assigned)
        for tid, ps in self.pending_revocation.items():
            out[tid] = out.get(tid, frozenset()) | ps
        return out


def reconcile(current: CurrentAssignment, target_epoch: int, target: Partitions,
              owned_elsewhere: Callable[[bytes, int], bool], reported: Mapping[bytes, frozenset[int]] | None
              ) -> CurrentAssignment:
    """The member's next current assignment.  ``owned_elsewhere(topic id, partition)``: whether a
    member (this one included, for its pending revocations) still owns it; ``reported``: the
    partitions the member's heartbeat says it owns, None when omitted."""
    if current.state == UNREVOKED_PARTITIONS:
        if _still_owns(current.pending_revocation, reported):
            return current
        return _next(current, current.epoch + 1, target_epoch, target, owned_elsewhere, reported)
    if current.state == STABLE and current.epoch == target_epoch:
        return current
    return _next(current, current.epoch, target_epoch, target, owned_elsewhere, reported)


def _still_owns(revoking: Partitions, reported: Mapping[bytes, frozenset[int]] | None) -> bool:
    if reported is None:
        return bool(revoking)
    return any(revoking.get(tid, frozenset()) & set(ps) for tid, ps in reported.items())


def _next(current: CurrentAssignment, epoch: int, target_epoch: int, target: Partitions,
          owned_elsewhere: Callable[[bytes, int], bool], reported: Mapping[bytes, frozenset[int]] | None
          ) -> CurrentAssignment:
    assigned: dict[bytes, frozenset[int]] = {}
    revoking: dict[bytes, frozenset[int]] = {}
    adding: dict[bytes, frozenset[int]] = {}
    unreleased = False
    for tid in set(target) | set(current.assigned):
        want, have = target.get(tid, frozenset()), current.assigned.get(tid, frozenset())
        keep = have & want
        free = frozenset(p for p in want - keep if not owned_elsewhere(tid, p))
        unreleased = unreleased or len(free) < len(want - keep)
        for out, ps in ((assigned, keep), (revoking, have - keep), (adding, free)):
            if ps:
                out[tid] = ps
    if revoking and _still_owns(revoking, reported):
        return CurrentAssignment(epoch, _previous(current, epoch), UNREVOKED_PARTITIONS, assigned, revoking)
    for tid, ps in adding.items():
        assigned[tid] = assigned.get(tid, frozenset()) | ps
    state = UNRELEASED_PARTITIONS if unreleased else STABLE
    return CurrentAssignment(target_epoch, _previous(current, target_epoch), state, assigned, {})


def _previous(current: CurrentAssignment, epoch: int) -> int:
    return current.epoch if epoch != current.epoch else current.previous_epoch
