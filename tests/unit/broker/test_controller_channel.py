"""ControllerChannel: which failures it retries, and that a slow controller gets one request."""
import asyncio

import pytest

from tierlog.broker.controller_channel import ControllerChannel, ControllerUnavailable
from tierlog.net.client import PeerUnavailable
from tierlog.protocol.errors import ErrorCode


class FakePeers:
    """Voters by id: a delay before answering, or a refused connection (None)."""

    def __init__(self, behaviour: dict):
        self.behaviour = behaviour
        self.addresses = {k: ("127.0.0.1", 1) for k in behaviour}
        self.sent: list[int] = []

    async def request(self, target, api_key, body, timeout_s, version):
        self.sent.append(target)
        delay, answer = self.behaviour[target]
        if delay is None:
            raise PeerUnavailable(f"node {target} refused")
        if delay > timeout_s:
            await asyncio.sleep(timeout_s)
            raise TimeoutError("timed out")
        await asyncio.sleep(delay)
        return answer


OK = {"ErrorCode": 0}
NOT_CONTROLLER = {"ErrorCode": ErrorCode.NOT_CONTROLLER}


def _channel(behaviour, leader=1):
    peers = FakePeers(behaviour)
    return peers, ControllerChannel(peers, sorted(behaviour), lambda: leader, attempt_timeout_s=0.1)


def test_a_slow_controller_is_asked_again_by_default():
    peers, channel = _channel({1: (0.3, OK), 2: (0.0, NOT_CONTROLLER)})
    with pytest.raises(ControllerUnavailable):
        asyncio.run(channel.send(19, {}, timeout_s=0.5, version=7))
    assert peers.sent.count(1) >= 2


def test_a_slow_controller_gets_one_request_when_resending_is_off():
    peers, channel = _channel({1: (0.3, OK), 2: (0.0, NOT_CONTROLLER)})
    assert asyncio.run(channel.send(19, {}, timeout_s=2.0, version=7, resend_after_timeout=False)) == OK
    assert peers.sent == [1]


def test_refusals_and_not_controller_move_on_to_the_next_voter():
    peers, channel = _channel({1: (None, None), 2: (0.0, NOT_CONTROLLER), 3: (0.0, OK)})
    assert asyncio.run(channel.send(19, {}, timeout_s=2.0, version=7, resend_after_timeout=False)) == OK
    assert peers.sent[0] == 1 and peers.sent[-1] == 3
