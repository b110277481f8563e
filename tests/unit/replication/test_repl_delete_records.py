"""DeleteRecords' purgatory and low watermark (Kafka's DelayedDeleteRecords)."""
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    DeleteCompletion,
    DeleteRecordsPurgatory,
    LeaderState,
    low_watermark,
)


def test_low_watermark_is_the_smallest_log_start_over_the_isr():
    assert low_watermark(1, 50, (1, 2, 3), {2: 50, 3: 40}) == 40
    assert low_watermark(1, 50, (1, 2), {2: 60, 3: 0}) == 50           # 3 is out of the ISR
    assert low_watermark(1, 50, (1, 2, 3), {2: 50}) == -1              # 3 not heard from yet
    assert low_watermark(1, 7, (1,), {}) == 7


def test_entries_complete_once_the_low_watermark_reaches_them():
    p = DeleteRecordsPurgatory()
    p.add("a", 10, now_ms=0, timeout_ms=1000)
    p.add("b", 20, now_ms=0, timeout_ms=1000)
    assert p.on_low_watermark(9) == []
    assert p.on_low_watermark(15) == [DeleteCompletion("a", ErrorCode.NONE, 15)]
    assert len(p) == 1
    assert p.on_low_watermark(20) == [DeleteCompletion("b", ErrorCode.NONE, 20)]
    assert len(p) == 0


def test_timeouts_and_lost_leadership():
    p = DeleteRecordsPurgatory()
    p.add("a", 10, now_ms=0, timeout_ms=100)
    p.add("b", 10, now_ms=50, timeout_ms=100)
    assert p.expire(99, 5) == []
    assert p.expire(100, 5) == [DeleteCompletion("a", ErrorCode.REQUEST_TIMED_OUT, 5)]
    assert p.fail_all() == [DeleteCompletion("b", ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)]
    assert p.expire(10_000, 5) == []


def test_the_purgatory_is_bounded():
    p = DeleteRecordsPurgatory(max_pending=2)
    p.add("a", 1, 0, 10)
    assert not p.full
    p.add("b", 1, 0, 10)
    assert p.full


def test_the_leader_takes_follower_log_starts_from_their_fetches():
    ls = LeaderState(topic_id=bytes(16), partition=0, leader_id=1, leader_epoch=3, partition_epoch=1,
                     replicas=(1, 2, 3), isr=(1, 2, 3), high_watermark=100, log_end_offset=100, now_ms=0)
    assert ls.low_watermark(60) == -1
    ls.on_follower_fetch(2, 100, now_ms=1, leader_leo=100, log_start_offset=60)
    ls.on_follower_fetch(3, 100, now_ms=1, leader_leo=100, log_start_offset=30)
    assert ls.low_watermark(60) == 30
    ls.on_follower_fetch(3, 100, now_ms=2, leader_leo=100, log_start_offset=60)
    assert ls.low_watermark(60) == 60
