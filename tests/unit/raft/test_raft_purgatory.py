"""FetchPurgatory: parked fetches expire at min(their wait, fetch_max_wait_ms) or are taken all at once."""

from tierlog.raft.messages import FetchRequest
from tierlog.raft.purgatory import FetchPurgatory


def _fetch(max_wait_ms):
    return FetchRequest("t", 2, 1, 0, 0, 0, max_wait_ms, 1024)


def test_parked_fetches_expire_in_order_of_their_deadline():
    p = FetchPurgatory(fetch_max_wait_ms=500)
    a = p.park(2, _fetch(100), 0)
    b = p.park(3, _fetch(10_000), 0)  # capped at 500
    assert a != b and sorted(p.deadlines()) == [100, 500]
    assert p.take_expired(99) == []
    assert [f.token for f in p.take_expired(100)] == [a]
    assert len(p) == 1
    [f] = p.take_expired(500)
    assert (f.token, f.sender_id, f.deadline_ms) == (b, 3, 500) and len(p) == 0


def test_take_all_empties_the_purgatory_in_parking_order():
    p = FetchPurgatory(fetch_max_wait_ms=500)
    tokens = [p.park(i, _fetch(100), 0) for i in (2, 3, 4)]
    assert [f.token for f in p.take_all()] == tokens
    assert p.take_all() == [] and list(p.deadlines()) == []
