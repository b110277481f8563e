"""Leader DivergingEpoch check and follower truncation offset."""
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import check_follower_fetch, truncation_offset


def test_no_divergence_when_epoch_and_offset_match():
    assert not check_follower_fetch(10, 3, 0, 20, (3, 15)).diverging
    assert check_follower_fetch(10, 3, 0, 20, (3, 15)).error == 0


def test_divergence_on_smaller_leader_epoch():
    c = check_follower_fetch(10, 4, 0, 20, (3, 8))
    assert c.diverging and (c.diverging_epoch, c.diverging_end_offset) == (3, 8)


def test_divergence_when_epoch_ends_before_fetch_offset():
    c = check_follower_fetch(12, 3, 0, 20, (3, 10))
    assert (c.diverging_epoch, c.diverging_end_offset) == (3, 10)


def test_out_of_range():
    assert check_follower_fetch(2, 3, 5, 20, (3, 10)).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert check_follower_fetch(2, 9, 0, 20, (-1, -1)).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert check_follower_fetch(25, -1, 0, 20, (-1, -1)).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert check_follower_fetch(20, -1, 0, 20, (-1, -1)).error == 0


def test_truncation_same_epoch_takes_min_of_both_ends():
    assert truncation_offset(3, 10, (3, 12), 15) == 10
    assert truncation_offset(3, 10, (3, 8), 15) == 8


def test_truncation_unknown_epoch_locally_uses_leader_end():
    assert truncation_offset(3, 10, (-1, -1), 15) == 10
    assert truncation_offset(3, 10, (-1, -1), 7) == 7


def test_truncation_follower_only_knows_smaller_epoch():
    # the follower never saw epoch 5; its largest epoch <= 5 is 2, ending at 6
    assert truncation_offset(5, 10, (2, 6), 15) == 6
    assert truncation_offset(5, 10, (2, 20), 15) == 15
