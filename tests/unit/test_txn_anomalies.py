"""The Jepsen-style checker (tests/support/txn_anomalies.py) on hand-made histories: a clean one
passes, and each anomaly injected into it is found, by its kind only."""
from __future__ import annotations

import dataclasses

import pytest
from txn_anomalies import Anomaly, History, Read, Session, Txn, Write, check, counts

# Partition 0: t1 (a0, a1) committed at 0-1, marker 2; t2 (b0) aborted at 3, marker 4; t3 (c0) at 5, marker 6.
# Partition 1: t1's a2 at 0, marker 1; t3's c1 at 2, marker 3.
T1 = Txn("p1", (Write(0, "a0", 0), Write(0, "a1", 1), Write(1, "a2", 0)), "commit")
T2 = Txn("p2", (Write(0, "b0", 3),), "abort")
T3 = Txn("p1", (Write(0, "c0", 5), Write(1, "c1", 2)), "commit")
READS_0 = (Read(0, 0, "a0"), Read(0, 1, "a1"), Read(0, 5, "c0"))
READS_1 = (Read(1, 0, "a2"), Read(1, 2, "c1"))


def clean() -> History:
    first = Session("c1", {0: 0, 1: 0}, (READS_0[0], READS_1[0], READS_0[1]), commits=((0, 2), (1, 1)))
    second = Session("c1", {0: 2, 1: 1}, (READS_0[2], READS_1[1]), commits=((0, 6),))
    drain = Session("drain", {0: 0, 1: 0}, READS_0 + READS_1, end={0: 7, 1: 4})
    return History([T1, T2, T3], [first, second, drain])


def kinds(history: History) -> dict[str, int]:
    return {k: n for k, n in counts(check(history)).items() if n}


def with_sessions(*sessions: Session) -> History:
    return History([T1, T2, T3], list(sessions))


def test_a_clean_history_has_no_anomaly():
    assert check(clean()) == []


def test_an_unknown_outcome_read_in_full_or_not_at_all_is_no_anomaly():
    t4 = Txn("p3", (Write(0, "d0", 7), Write(1, "d1", None)), "unknown")
    h = clean()
    assert check(History(h.txns + [t4], h.sessions)) == []          # it aborted: nobody saw it
    drain = Session("drain", {0: 0, 1: 0}, READS_0 + (Read(0, 7, "d0"),) + READS_1 + (Read(1, 4, "d1"),),
                    end={0: 9, 1: 6})
    assert check(History(h.txns + [t4], h.sessions[:2] + [drain])) == []     # it committed: all of it


def test_a_committed_record_read_past_and_never_seen_is_a_lost_write():
    h = with_sessions(Session("c1", {0: 0}, (READS_0[0], READS_0[2])))        # a1 at 1 stepped over
    assert kinds(h) == {"lost-write": 1, "skipping-poll": 1, "torn-transaction": 1}
    assert kinds(with_sessions(Session("c1", {0: 0}, (READS_0[0],)))) == {}   # not read past: not lost yet


def test_a_lost_write_whose_offset_is_unknown_is_found_by_the_drain():
    t = Txn("p4", (Write(1, "e0", None),), "commit")
    h = clean()
    assert kinds(History(h.txns + [t], h.sessions)) == {"lost-write": 1}


def test_a_value_at_two_offsets_is_a_duplicate():
    drain = Session("drain", {0: 0}, READS_0 + (Read(0, 7, "c0"),), end={0: 8})
    assert kinds(with_sessions(drain)) == {"duplicate": 1}


def test_a_record_of_an_aborted_transaction_read_is_an_aborted_read():
    s = Session("c1", {0: 0}, READS_0[:2] + (Read(0, 3, "b0"), READS_0[2]))
    assert kinds(with_sessions(s)) == {"aborted-read": 1}


def test_a_value_nobody_wrote_is_an_unknown_read():
    s = Session("c1", {0: 0}, READS_0 + (Read(0, 7, "zz"),))
    assert kinds(with_sessions(s)) == {"unknown-read": 1}


def test_part_of_an_unknown_transaction_seen_and_part_read_past_is_torn():
    t4 = Txn("p3", (Write(0, "d0", None), Write(1, "d1", 4)), "unknown")
    drain = Session("drain", {0: 0, 1: 0}, READS_0 + (Read(0, 7, "d0"),) + READS_1 + (Read(1, 6, "x"),),
                    end={0: 9, 1: 8})
    t5 = Txn("p5", (Write(1, "x", 6),), "commit")
    h = History([T1, T2, T3, t4, t5], [drain])
    assert kinds(h) == {"torn-transaction": 1}


def test_offsets_going_backwards_in_a_session_are_a_nonmonotonic_poll():
    s = Session("c1", {0: 0}, (READS_0[0], READS_0[1], READS_0[0], READS_0[2]))
    assert kinds(with_sessions(s)) == {"nonmonotonic-poll": 1}
    below_start = Session("c1", {0: 2}, (READS_0[1], READS_0[2]))
    assert kinds(with_sessions(below_start)) == {"nonmonotonic-poll": 1}


def test_a_session_that_begins_past_a_visible_record_is_a_skipping_poll():
    s = Session("c1", {0: 1}, (READS_0[2],))        # began at 1, first poll 5: a1 at 1 stepped over
    assert kinds(with_sessions(s)) == {"skipping-poll": 1, "lost-write": 1}
    over_aborted = Session("c1", {0: 2}, (READS_0[2],))     # 2-4: a marker, b0 (aborted), a marker
    assert kinds(with_sessions(over_aborted)) == {}


def test_one_offset_with_two_values_is_inconsistent():
    t = Txn("p4", (Write(0, "e0", 5),), "commit")      # reported at c0's offset
    h = clean()
    assert kinds(History(h.txns + [t], h.sessions)) == {"inconsistent-offsets": 1, "lost-write": 1}


def test_a_session_that_begins_below_an_acknowledged_commit_has_lost_it():
    h = clean()
    rewound = dataclasses.replace(h.sessions[1], start={0: 0, 1: 1}, reads=READS_0 + READS_1[1:])
    assert kinds(History(h.txns, [h.sessions[0], rewound, h.sessions[2]])) == {"lost-offset-commit": 1}


def test_an_outcome_outside_commit_abort_unknown_is_a_programmer_error():
    with pytest.raises(AssertionError):
        Txn("p", (), "maybe")       # type: ignore[arg-type]


def test_counts_lists_every_kind():
    assert set(counts([Anomaly("duplicate", "x")])) >= {"lost-write", "duplicate", "torn-transaction"}
