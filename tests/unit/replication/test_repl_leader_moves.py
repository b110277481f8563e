"""LeaderMoves: a new leader answers at once a follower whose fetch omits a partition it now follows here."""
from tierlog.replication.leader_moves import LeaderMoves

P, Q = (b"t" * 16, 0), (b"t" * 16, 1)


def test_the_other_replicas_are_expected_after_a_move():
    moves = LeaderMoves(window_ms=500)
    assert moves.became_leader(P, [1, 2, 3], leader_id=2, now_ms=0) == [1, 3]
    assert moves.must_answer_now(1, [Q].__contains__, 10)           # its parked fetch still names the old set
    assert moves.must_answer_now(3, [].__contains__, 10)
    assert not moves.must_answer_now(2, [Q].__contains__, 10)       # the leader itself
    assert not moves.must_answer_now(4, [Q].__contains__, 10)       # not a replica


def test_a_fetch_naming_the_partition_clears_the_expectation():
    moves = LeaderMoves(window_ms=500)
    moves.became_leader(P, [1, 2], leader_id=2, now_ms=0)
    assert not moves.must_answer_now(1, [P, Q].__contains__, 5)     # it fetches it now: parking is fine
    moves.fetched(1, P)
    assert not moves.must_answer_now(1, [Q].__contains__, 6)


def test_every_moved_partition_must_be_named():
    moves = LeaderMoves(window_ms=500)
    moves.became_leader(P, [1, 2], leader_id=2, now_ms=0)
    moves.became_leader(Q, [1, 2], leader_id=2, now_ms=0)
    assert moves.must_answer_now(1, [P].__contains__, 5)
    moves.fetched(1, P)
    assert moves.must_answer_now(1, [P].__contains__, 5)
    moves.fetched(1, Q)
    assert not moves.must_answer_now(1, [].__contains__, 5)


def test_a_follower_that_never_comes_is_not_waited_for_after_the_window():
    moves = LeaderMoves(window_ms=500)
    moves.became_leader(P, [1, 2], leader_id=2, now_ms=1000)
    assert moves.must_answer_now(1, [Q].__contains__, 1499)
    assert not moves.must_answer_now(1, [Q].__contains__, 1500)
    assert not moves.must_answer_now(1, [Q].__contains__, 1501)
