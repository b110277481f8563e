"""A voter whose controller listener moved tells the leader (KIP-853 UpdateRaftVoter, sent at start-up).

With kraft.version 1 the voters' endpoints live in the metadata log, so a controller restarted
on another host or port would otherwise be listed at its old address (the others could not
send it Vote or BeginQuorumEpoch). Once this replica is a voter under its own directory id,
knows a leader and, following it, has caught up to the high watermark the leader named, it
compares the endpoint the voter set gives its controller listener with the one it serves; if
they differ it sends UpdateRaftVoter to the leader (or, leading, writes the change itself),
asking again every ``RETRY_S`` until the leader answers NONE. Then it is done: a listener only
moves across a restart.
"""
from __future__ import annotations

import asyncio
import logging

from tierlog.net.client import PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.raft.voters import KRAFT_VERSION_DYNAMIC, Endpoint

from .controller_server import ControllerServer

__all__ = ["RETRY_S", "VoterUpdate"]

log = logging.getLogger(__name__)
RETRY_S = 1.0
REQUEST_TIMEOUT_S = 30.0


class VoterUpdate:
    def __init__(self, server: ControllerServer, listener: Endpoint):
        self._server = server
        self._listener = listener

    async def run(self) -> None:
        while not await self._once():
            await asyncio.sleep(RETRY_S)

    async def _once(self) -> bool:
        """True once nothing is left to do (static quorum, endpoints agree, or the leader took ours)."""
        node = self._server.driver.node
        if node.kraft_version < KRAFT_VERSION_DYNAMIC:
            return True
        voter = node.voter_set.get(node.node_id)
        leader = node.leader_and_epoch.leader_id
        if voter is None or voter.directory_id != node.directory_id or leader is None:
            return False                # not (yet) a voter under this directory, or no leader known
        if leader != node.node_id and not self._caught_up():
            return False
        listed = next((e for e in voter.endpoints if e.name == self._listener.name), None)
        if listed == self._listener:
            return True
        endpoints = tuple(e for e in voter.endpoints if e.name != self._listener.name) + (self._listener,)
        if leader == node.node_id:
            error, _ = self._server.change_voters(
                lambda now: node.update_voter(node.node_id, voter.directory_id, endpoints, now))
        else:
            error = await self._ask(leader, voter.directory_id, endpoints)
        if error == ErrorCode.NONE:
            log.info("voter %d: the quorum now lists %s://%s:%d", node.node_id, self._listener.name,
                     self._listener.host, self._listener.port)
        return error == ErrorCode.NONE

    def _caught_up(self) -> bool:
        """This follower's log reaches the high watermark its leader last named. Asked earlier, the
        change could commit on the leader and the voter that never saw us move while our own log is
        behind theirs: with the leader gone, that voter refuses us (our log is shorter) and cannot
        reach us (it asks our old address), and no leader can be elected."""
        hw = self._server.driver.leader_high_watermark
        return hw is not None and self._server.driver.node.log.end_offset >= hw

    async def _ask(self, leader: int, directory_id: bytes, endpoints: tuple[Endpoint, ...]) -> int:
        node = self._server.driver.node
        body = {"ClusterId": node.config.cluster_id, "CurrentLeaderEpoch": node.epoch, "VoterId": node.node_id,
                "VoterDirectoryId": directory_id,
                "Listeners": [{"Name": e.name, "Host": e.host, "Port": e.port} for e in endpoints],
                "KRaftVersionFeature": {"MinSupportedVersion": 0, "MaxSupportedVersion": KRAFT_VERSION_DYNAMIC}}
        try:
            answer = await self._server.driver.peers.request(leader, ApiKey.UPDATE_RAFT_VOTER, body,
                                                             REQUEST_TIMEOUT_S, 0)
        except (TimeoutError, PeerUnavailable) as e:
            log.debug("UpdateRaftVoter to node %d failed: %s", leader, e)
            return ErrorCode.REQUEST_TIMED_OUT
        return int(answer["ErrorCode"])
