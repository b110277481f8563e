"""AcksPurgatory: completion by high watermark, expiry, min ISR errors, bound."""
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import AcksPurgatory


def test_completes_when_hw_passes_last_offset():
    p = AcksPurgatory()
    p.add("a", 5, now_ms=0, timeout_ms=100)      # batch 0..4
    p.add("b", 9, now_ms=0, timeout_ms=100)
    assert p.on_high_watermark(4, 3, 2) == []
    done = p.on_high_watermark(5, 3, 2)
    assert [(c.token, c.error) for c in done] == [("a", 0)]
    assert [(c.token, c.error) for c in p.on_high_watermark(20, 3, 2)] == [("b", 0)]
    assert len(p) == 0


def test_a_duplicate_retry_waits_at_its_place_among_later_appends():
    # found by the nemesis soak (bench/soak.py --short --seed 7): a producer's retry of a batch
    # still waiting for its followers is answered with the original offsets, below later appends
    # of other producers; it closed the connection with an AssertionError
    p = AcksPurgatory()
    p.add("a", 5, now_ms=0, timeout_ms=100)      # batch 0..4
    p.add("b", 9, now_ms=0, timeout_ms=100)      # batch 5..8
    p.add("c", 12, now_ms=0, timeout_ms=100)     # batch 9..11
    p.add("a-retry", 5, now_ms=10, timeout_ms=100)
    p.add("b-retry", 9, now_ms=10, timeout_ms=100)
    assert [c.token for c in p.on_high_watermark(5, 3, 2)] == ["a", "a-retry"]
    assert [c.token for c in p.on_high_watermark(9, 3, 2)] == ["b", "b-retry"]
    assert [c.token for c in p.on_high_watermark(12, 3, 2)] == ["c"]
    assert len(p) == 0


def test_expiry_at_request_timeout():
    p = AcksPurgatory()
    p.add("a", 5, now_ms=0, timeout_ms=100)
    p.add("b", 6, now_ms=50, timeout_ms=100)
    assert p.expire(99) == []
    assert [(c.token, c.error) for c in p.expire(100)] == [("a", ErrorCode.REQUEST_TIMED_OUT)]
    assert p.next_deadline_ms() == 150
    assert [c.token for c in p.on_high_watermark(6, 3, 2)] == ["b"]
    assert p.expire(1000) == [] and p.next_deadline_ms() is None


def test_not_enough_replicas_before_append():
    p = AcksPurgatory()
    assert p.check_before_append(isr_size=1, effective_min_isr=2) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert p.check_before_append(isr_size=2, effective_min_isr=2) == 0


def test_not_enough_replicas_after_append_when_isr_shrinks():
    p = AcksPurgatory()
    p.add("a", 5, now_ms=0, timeout_ms=100)
    p.add("b", 50, now_ms=0, timeout_ms=100)
    done = p.on_high_watermark(3, isr_size=1, effective_min_isr=2)
    assert [(c.token, c.error) for c in done] == [("a", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
                                                  ("b", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)]


def test_bounded():
    p = AcksPurgatory(max_pending=2)
    p.add("a", 1, 0, 10)
    p.add("b", 2, 0, 10)
    assert p.check_before_append(3, 2) == ErrorCode.REQUEST_TIMED_OUT
    p.on_high_watermark(1, 3, 2)
    assert p.check_before_append(3, 2) == 0


def test_fail_all_on_leadership_loss():
    p = AcksPurgatory()
    p.add("a", 1, 0, 10)
    assert [(c.token, c.error) for c in p.fail_all()] == [("a", ErrorCode.NOT_LEADER_OR_FOLLOWER)]
    assert len(p) == 0 and p.expire(100) == []
