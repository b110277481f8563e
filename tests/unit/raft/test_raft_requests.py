"""RequestManager: one request in flight per peer, backoff, timeouts, observer discovery."""

import random

from tierlog.raft.requests import RequestManager


def _rm():
    wakes = []
    return RequestManager(request_timeout_ms=100, retry_backoff_ms=10, wake=wakes.append), wakes


def test_one_request_in_flight_per_peer_until_answered():
    rm, wakes = _rm()
    req = object()
    assert rm.can_send(2, 0)
    rm.sent(2, req, 0)
    assert wakes == [100] and not rm.can_send(2, 5) and rm.can_send(3, 5)
    assert not rm.answered(2, object())  # another request object: not ours
    assert rm.answered(2, req) and rm.can_send(2, 6)
    assert not rm.answered(2, req)  # a duplicate answer is not matched again


def test_failure_backs_off_and_wakes_at_its_end():
    rm, wakes = _rm()
    req = object()
    rm.sent(2, req, 0)
    rm.failed(2, req, 50)
    assert not rm.can_send(2, 55) and wakes[-1] == 60
    assert rm.can_send(2, 60)


def test_timeout_frees_the_peer_after_backoff():
    rm, wakes = _rm()
    rm.sent(2, object(), 0)
    rm.expire(99)
    assert rm.is_inflight(2) and wakes[-1] == 100
    rm.expire(100)
    assert not rm.is_inflight(2) and not rm.can_send(2, 105) and rm.can_send(2, 110)


def test_ready_cancels_a_backoff_and_reset_forgets_everything():
    rm, _ = _rm()
    rm.backoff(2, 0)
    rm.ready(2, 3)
    assert rm.can_send(2, 3)
    rm.sent(3, object(), 0)
    rm.backoff(4, 0)
    rm.reset()
    assert rm.can_send(3, 0) and rm.can_send(4, 0)


def test_observer_discovery_asks_one_voter_at_a_time():
    rm, _ = _rm()
    rng = random.Random(1)
    target = rm.send_to_any({1, 2, 3}, rng, 0)
    assert target in {1, 2, 3} and rm.discovery_target == target
    req = object()
    rm.sent(target, req, 0)
    assert rm.send_to_any({1, 2, 3}, rng, 1) is None  # still waiting for the first one
    rm.failed(target, req, 1)
    again = rm.send_to_any({target}, rng, 5)
    assert again is None  # the only candidate is backing off
    assert rm.send_to_any({target}, rng, 11) == target
