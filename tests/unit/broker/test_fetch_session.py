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


def test_new_session_then_incremental_keeps_partitions_and_forgets():
    c = cache()
    full = c.open(0, 0, [sp(0), sp(1), sp(2)], [])
    assert full.session_id != 0 and not full.incremental
    inc = c.open(full.session_id, 1, [sp(1, offset=50)], [("t", 2)])
    assert inc.incremental
    assert [(p.partition, p.fetch_offset) for p in inc.partitions] == [(0, 0), (1, 50)]


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
    inc = c.open(full.session_id, 1, [], [])
    p0, p1 = inc.partitions
    assert not inc.should_return(p0, False, 0, 10, 10, 0)          # nothing new
    assert inc.should_return(p1, False, 0, 11, 11, 0)              # high watermark moved
    assert inc.should_return(p0, True, 0, 10, 10, 0)               # records
    assert inc.should_return(p0, False, 6, 10, 10, 0)              # an error
