"""The server-side assignors (uniform, range) and the reconciliation rules of KIP-848, sans-IO."""
import random

import pytest

from tierlog.group.assignors import MemberSpec, range_assign, uniform_assign
from tierlog.group.reconcile import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    CurrentAssignment,
    reconcile,
)

A, B = b"A" * 16, b"B" * 16


def flat(result):
    return sorted((m, t, p) for m, a in result.items() for t, ps in a.items() for p in ps)


def counts(result):
    return sorted(sum(len(ps) for ps in a.values()) for a in result.values())


@pytest.mark.parametrize("assign", [uniform_assign, range_assign])
def test_every_partition_has_exactly_one_subscribed_owner(assign):
    rng = random.Random(7)
    for _ in range(200):
        topics = {t: rng.randint(1, 9) for t in (A, B)}
        members = {f"m{i}": MemberSpec(frozenset(rng.sample([A, B], rng.randint(1, 2))))
                   for i in range(rng.randint(1, 6))}
        result = assign(members, topics)
        owned = [(t, p) for _, t, p in flat(result)]
        assert len(owned) == len(set(owned))
        for m, a in result.items():
            assert set(a) <= members[m].subscribed
        expected = {(t, p) for t, n in topics.items() for p in range(n)
                    if any(t in s.subscribed for s in members.values())}
        assert set(owned) == expected


def test_uniform_is_balanced_and_sticky():
    topics = {A: 6}
    two = uniform_assign({"a": MemberSpec(frozenset([A])), "b": MemberSpec(frozenset([A]))}, topics)
    assert counts(two) == [3, 3]
    three = uniform_assign({m: MemberSpec(frozenset([A]), two.get(m, {})) for m in "abc"}, topics)
    assert counts(three) == [2, 2, 2]
    for m in "ab":
        assert three[m][A] <= two[m][A]                 # nothing moved between a and b
    back = uniform_assign({m: MemberSpec(frozenset([A]), three[m]) for m in "ab"}, topics)
    assert counts(back) == [3, 3] and all(three[m][A] <= back[m][A] for m in "ab")


def test_uniform_with_different_subscriptions_balances_what_it_can():
    result = uniform_assign({"a": MemberSpec(frozenset([A, B])), "b": MemberSpec(frozenset([A]))}, {A: 4, B: 4})
    assert counts(result) == [4, 4]


def test_range_gives_consecutive_ranges_by_member_id_and_co_partitions():
    result = range_assign({m: MemberSpec(frozenset([A, B])) for m in "bca"}, {A: 7, B: 7})
    assert result["a"] == {A: frozenset({0, 1, 2}), B: frozenset({0, 1, 2})}
    assert result["b"] == {A: frozenset({3, 4}), B: frozenset({3, 4})}
    assert result["c"] == {A: frozenset({5, 6}), B: frozenset({5, 6})}


def owned_by(owners):
    return lambda t, p: (t, p) in owners


def test_stable_member_at_the_target_epoch_is_unchanged():
    cur = CurrentAssignment(3, 2, STABLE, {A: frozenset({0, 1})})
    assert reconcile(cur, 3, {A: frozenset({0})}, owned_by(set()), None) is cur


def test_revocation_comes_first_and_keeps_the_epoch():
    cur = CurrentAssignment(3, 2, STABLE, {A: frozenset({0, 1})})
    nxt = reconcile(cur, 4, {A: frozenset({0, 2})}, owned_by({(A, 0), (A, 1)}), {A: frozenset({0, 1})})
    assert (nxt.epoch, nxt.state) == (3, UNREVOKED_PARTITIONS)
    assert nxt.assigned == {A: frozenset({0})} and nxt.pending_revocation == {A: frozenset({1})}
    # still reported as owned: no progress
    assert reconcile(nxt, 4, {A: frozenset({0, 2})}, owned_by({(A, 0), (A, 1)}), {A: frozenset({0, 1})}) is nxt
    # omitted owned partitions do not count as revoked
    assert reconcile(nxt, 4, {A: frozenset({0, 2})}, owned_by({(A, 0), (A, 1)}), None) is nxt
    done = reconcile(nxt, 4, {A: frozenset({0, 2})}, owned_by({(A, 0)}), {A: frozenset({0})})
    assert (done.epoch, done.previous_epoch, done.state) == (4, 3, STABLE)
    assert done.assigned == {A: frozenset({0, 2})} and not done.pending_revocation


def test_a_partition_another_member_still_owns_is_unreleased_until_freed():
    cur = CurrentAssignment(1, 0, STABLE, {})
    nxt = reconcile(cur, 2, {A: frozenset({0, 1})}, owned_by({(A, 1)}), {})
    assert (nxt.epoch, nxt.state, nxt.assigned) == (2, UNRELEASED_PARTITIONS, {A: frozenset({0})})
    freed = reconcile(nxt, 2, {A: frozenset({0, 1})}, owned_by({(A, 0)}), {A: frozenset({0})})
    assert (freed.epoch, freed.state, freed.assigned) == (2, STABLE, {A: frozenset({0, 1})})


def test_revoking_when_the_member_already_dropped_the_partition_goes_straight_to_the_target():
    cur = CurrentAssignment(1, 0, STABLE, {A: frozenset({0, 1})})
    nxt = reconcile(cur, 2, {A: frozenset({0})}, owned_by({(A, 0), (A, 1)}), {A: frozenset({0})})
    assert (nxt.epoch, nxt.state, nxt.assigned) == (2, STABLE, {A: frozenset({0})})
