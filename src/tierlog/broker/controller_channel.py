"""The broker's line to the active controller (Kafka's NodeToControllerChannelManager).

Brokers forward admin requests (CreateTopics, DeleteTopics,
IncrementalAlterConfigs, ...), and send registration, heartbeats,
AllocateProducerIds and AlterPartition to whichever voter leads the metadata
quorum.  The leader comes from the local Raft replica (``leader_id()``); when
it is unknown, or a voter answers NOT_CONTROLLER or cannot be reached, the
channel tries the voters in turn until the request's deadline.

An attempt that times out may still have been carried out (the controller was
only slow to commit).  Sending it again is harmless for most requests, but a
repeated CreateTopics would answer TOPIC_ALREADY_EXISTS for the topic it just
created.  So ``send(..., resend_after_timeout=False)`` gives each attempt the
whole remaining deadline instead of ``attempt_timeout_s``: it moves on only
when a voter refuses the connection or answers NOT_CONTROLLER.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable

from tierlog.clock import monotonic_s
from tierlog.net.client import Peers, PeerUnavailable
from tierlog.protocol import APIS
from tierlog.protocol.errors import ErrorCode

__all__ = ["ControllerChannel", "ControllerUnavailable"]

log = logging.getLogger(__name__)
RETRY_BACKOFF_S = 0.1


class ControllerUnavailable(Exception):
    """No active controller answered before the deadline."""


class ControllerChannel:
    def __init__(self, peers: Peers, voters: list[int] | Callable[[], list[int]], leader_id,
                 attempt_timeout_s: float, node_id: int = -1, local=None):
        self.peers = peers
        self.node_id = node_id
        self.local = local                  # this process's ControllerServer, if it has the role
        fixed = sorted(voters) if not callable(voters) else []
        self._voters = voters if callable(voters) else (lambda: fixed)
        self.leader_id = leader_id          # () -> int | None
        self.attempt_timeout_s = attempt_timeout_s
        self._turn = itertools.count()

    @property
    def voters(self) -> list[int]:
        return sorted(self._voters())

    async def send(self, api_key: int, body: dict, timeout_s: float, version: int | None = None,
                   resend_after_timeout: bool = True) -> dict:
        """The controller's response; NOT_CONTROLLER answers and dead voters are retried."""
        deadline = monotonic_s() + timeout_s
        last, prefer_leader = "no attempt", True
        attempt_s = self.attempt_timeout_s if resend_after_timeout else timeout_s
        while monotonic_s() < deadline:
            target = self._target(prefer_leader)
            prefer_leader = False
            remaining = max(0.05, min(attempt_s, deadline - monotonic_s()))
            try:
                resp = await self._request(target, api_key, body, remaining, version)
            except (TimeoutError, PeerUnavailable) as e:
                last = str(e) or type(e).__name__
            else:
                if not _not_controller(resp):
                    return resp
                last = f"node {target} is not the active controller"
            await asyncio.sleep(RETRY_BACKOFF_S)
        raise ControllerUnavailable(f"no active controller answered api {api_key} within {timeout_s:g}s: {last}")

    async def _request(self, target: int, api_key: int, body: dict, timeout_s: float, version: int | None):
        if target == self.node_id and self.local is not None:
            v = APIS[api_key].max_version if version is None else version
            return await asyncio.wait_for(self.local.request(api_key, v, body), timeout_s)
        return await self.peers.request(target, api_key, body, timeout_s, version)

    def _target(self, prefer_leader: bool) -> int:
        leader = self.leader_id()
        if prefer_leader and leader is not None and (leader in self.peers.addresses or leader == self.node_id):
            return leader
        voters = self.voters
        return voters[next(self._turn) % len(voters)]


def _not_controller(resp: dict) -> bool:
    """NOT_CONTROLLER at the top level or in the first level of per-item results."""
    if resp.get("ErrorCode") == ErrorCode.NOT_CONTROLLER:
        return True
    for value in resp.values():
        if isinstance(value, list) and value and isinstance(value[0], dict) \
                and all(item.get("ErrorCode") == ErrorCode.NOT_CONTROLLER for item in value):
            return True
    return False
