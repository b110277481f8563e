import random

import pytest

from tierlog.broker.fetch_session import (
    FetchSessionCache,
    FetchSessionError,
    SessionPartition,
)
from tierlog.protocol.errors import ErrorCode


def sp(p, offset=0):
    return SessionPartition("t", p, offset, 1 << 20)


def cache(slots=10):
    return FetchSessionCache(slots, random.Random(7))


def test_sessionless_full_fetch_creates_nothing():
    c = cache()
    view = c.open(0, -1, [sp(0)], [])
    assert view.session_id == 0 and not view.incremental and len(c) == 0


def test_new_session_then_incremental_reads_only_what_it_names():
    c = cache()
    full = c.open(0, 0, [sp(0), sp(1), sp(2)], [])
    assert full.session_id != 0 and not full.incremental
    assert [p.partition for p in full.partitions] == [0, 1, 2]
    inc = c.open(full.session_id, 1, [sp(1, offset=50)], [("t", 2)])
    assert inc.incremental and inc.named == {("t", 1)}
    assert [(p.partition, p.fetch_offset) for p in inc.partitions] == [(1, 50)]
    assert inc.contains(("t", 0)) and not inc.contains(("t", 2))
    assert c.open(full.session_id, 2, [], []).partitions == []          # nothing named, nothing changed


def test_a_change_marks_the_partition_in_every_session_holding_it():
    c = cache()
    a = c.open(0, 0, [sp(0), sp(1)], []).session_id
    b = c.open(0, 0, [sp(1)], []).session_id
    c.mark_changed([("t", 1), ("other", 0)])
    assert [p.partition for p in c.open(a, 1, [], []).partitions] == [1]
    assert [p.partition for p in c.open(b, 1, [], []).partitions] == [1]
    assert c.open(a, 2, [], []).partitions == []                        # read once per change
    c.open(a, 3, [], [("t", 1)])                                        # forgotten: no longer marked
    c.mark_changed([("t", 1)])
    assert c.open(a, 4, [], []).partitions == []


def test_a_parked_fetch_wakes_on_a_change_of_its_session():
    c = cache()
    sid = c.open(0, 0, [sp(0), sp(1)], []).session_id
    view = c.open(sid, 1, [], [])
    waiter = Waiter()
    assert view.park(waiter) and not waiter.done()
    c.mark_changed([("t", 0)])
    assert waiter.done()
    assert [p.partition for p in view.take_changed()] == [0]
    again = c.open(sid, 2, [], [])
    early = Waiter()
    view.keep(again.contains(("t", 1)) and sp(1))                       # kept for the next fetch
    assert again.park(early) and early.done()                           # news already waiting: no park
    assert not c.open(0, -1, [sp(0)], []).park(Waiter())               # no session to park on


def test_a_followers_fetch_wakes_on_records_not_on_a_watermark_move():
    """Kafka's DelayedFetch: a follower's fetch completes on new bytes; a consumer's also when
    the high watermark moves (what it may read grew)."""
    c = cache()
    follower = c.open(c.open(0, 0, [sp(0)], [], replica=True).session_id, 1, [], [])
    consumer = c.open(c.open(0, 0, [sp(0)], []).session_id, 1, [], [])
    f_waiter, c_waiter = Waiter(), Waiter()
    assert follower.park(f_waiter) and consumer.park(c_waiter)
    c.mark_changed([("t", 0)], records=False)
    assert c_waiter.done() and not f_waiter.done()
    c.mark_changed([("t", 0)])
    assert f_waiter.done()
    assert [p.partition for p in follower.take_changed()] == [0]         # the move is in its next answer



def test_the_session_answered_is_not_marked_by_the_watermark_its_own_fetch_moved():
    """A follower's fetch that moves the high watermark carries the new one in its answer: its own
    session is not marked for it (no wake for a round trip that says nothing new); the other
    follower's session is."""
    c = cache()
    own = c.open(c.open(0, 0, [sp(0)], [], replica=True).session_id, 1, [], [])
    other = c.open(c.open(0, 0, [sp(0)], [], replica=True).session_id, 1, [], [])
    c.mark_changed([("t", 0)], records=False, answered=own.session_id)
    assert own.take_changed() == [] and [p.partition for p in other.take_changed()] == [0]


class Waiter:
    def __init__(self):
        self.result = None

    def done(self):
        return self.result is not None

    def set_result(self, value):
        self.result = "set"


def test_wrong_epoch_and_unknown_session_are_errors():
    c = cache()
    sid = c.open(0, 0, [sp(0)], []).session_id
    with pytest.raises(FetchSessionError) as e:
        c.open(sid, 5, [], [])
    assert e.value.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    with pytest.raises(FetchSessionError) as e:
        c.open(sid + 1, 1, [], [])
    assert e.value.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_epochs_advance_one_by_one():
    c = cache()
    sid = c.open(0, 0, [sp(0)], []).session_id
    for epoch in range(1, 5):
        assert c.open(sid, epoch, [], []).session_id == sid


def test_final_epoch_closes_the_session():
    c = cache()
    sid = c.open(0, 0, [sp(0)], []).session_id
    assert c.open(sid, -1, [sp(0)], []).session_id == 0
    with pytest.raises(FetchSessionError):
        c.open(sid, 1, [], [])


def test_cache_is_bounded_and_evicts_least_recently_used():
    c = cache(slots=2)
    a = c.open(0, 0, [sp(0)], []).session_id
    b = c.open(0, 0, [sp(0)], []).session_id
    c.open(a, 1, [], [])                      # a is now the most recent
    c.open(0, 0, [sp(0)], [])                 # evicts b
    assert len(c) == 2
    with pytest.raises(FetchSessionError):
        c.open(b, 1, [], [])
    c.open(a, 2, [], [])


def test_incremental_response_only_returns_changes():
    c = cache()
    full = c.open(0, 0, [sp(0), sp(1)], [])
    for p in full.partitions:
        assert full.should_return(p, False, 0, hw=10, lso=10, log_start=0)
    c.mark_changed([("t", 0), ("t", 1)])
    inc = c.open(full.session_id, 1, [], [])
    p0, p1 = sorted(inc.partitions, key=lambda p: p.partition)
    assert not inc.should_return(p0, False, 0, 10, 10, 0)          # nothing new
    assert inc.should_return(p1, False, 0, 11, 11, 0)              # high watermark moved
    assert inc.should_return(p0, True, 0, 10, 10, 0)               # records
    assert inc.should_return(p0, False, 6, 10, 10, 0)              # an error
