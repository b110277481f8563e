"""Share sessions (``group/share_session.py``): ShareSessionEpoch's rules and the session limit."""
from tierlog.group.share_session import ShareSessionCache
from tierlog.protocol.errors import ErrorCode

T = b"\x01" * 16
P0, P1 = (T, 0), (T, 1)


def test_a_session_opens_advances_and_closes():
    cache = ShareSessionCache(10)
    error, session = cache.fetch("g", "m", 0, [P0], [], acknowledges=False)
    assert error == ErrorCode.NONE and session.partitions == {P0} and session.next_epoch == 1
    error, session = cache.fetch("g", "m", 1, [P1], [P0], acknowledges=True)
    assert error == ErrorCode.NONE and session.partitions == {P1} and session.next_epoch == 2
    assert cache.fetch("g", "m", 1, [], [], acknowledges=False) == (ErrorCode.INVALID_SHARE_SESSION_EPOCH, None)
    assert cache.acknowledge("g", "m", 2)[1].next_epoch == 3
    error, closed = cache.acknowledge("g", "m", -1)
    assert error == ErrorCode.NONE and closed.partitions == {P1} and len(cache) == 0
    assert cache.fetch("g", "m", 3, [], [], acknowledges=False) == (ErrorCode.SHARE_SESSION_NOT_FOUND, None)


def test_epoch_zero_replaces_and_never_acknowledges():
    cache = ShareSessionCache(10)
    cache.fetch("g", "m", 0, [P0], [], acknowledges=False)
    cache.fetch("g", "m", 1, [], [], acknowledges=False)
    assert cache.fetch("g", "m", 0, [P1], [], acknowledges=False)[1].partitions == {P1}
    assert cache.get("g", "m").next_epoch == 1 and len(cache) == 1
    assert cache.fetch("g", "m", 0, [P1], [], acknowledges=True) == (ErrorCode.INVALID_REQUEST, None)
    assert cache.acknowledge("g", "m", 0) == (ErrorCode.INVALID_SHARE_SESSION_EPOCH, None)


def test_the_final_epoch_only_acknowledges():
    cache = ShareSessionCache(10)
    cache.fetch("g", "m", 0, [P0], [], acknowledges=False)
    assert cache.fetch("g", "m", -1, [P0], [], acknowledges=False) == (ErrorCode.INVALID_REQUEST, None)
    assert cache.fetch("g", "m", -1, [P0], [], acknowledges=True)[0] == ErrorCode.NONE and len(cache) == 0


def test_the_limit_refuses_a_new_session_not_a_replacement():
    cache = ShareSessionCache(1)
    cache.fetch("g", "m", 0, [P0], [], acknowledges=False)
    assert cache.fetch("g", "n", 0, [P0], [], acknowledges=False) == (ErrorCode.SHARE_SESSION_LIMIT_REACHED, None)
    assert cache.fetch("g", "m", 0, [P1], [], acknowledges=False)[0] == ErrorCode.NONE
    assert cache.remove_member("g", "m") is not None
    assert cache.fetch("g", "n", 0, [P0], [], acknowledges=False)[0] == ErrorCode.NONE


def test_the_epoch_wraps_to_one():
    cache = ShareSessionCache(1)
    cache.fetch("g", "m", 0, [], [], acknowledges=False)
    cache.get("g", "m").next_epoch = (1 << 31) - 1
    assert cache.acknowledge("g", "m", (1 << 31) - 1)[1].next_epoch == 1
