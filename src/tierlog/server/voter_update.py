"""A voter whose controller listener moved tells the leader (KIP-853 UpdateRaftVoter).

With kraft.version 1 the voters' endpoints live in the metadata log, so a controller restarted
on another host or port would otherwise be listed at its old address (the others could not
send it Vote or BeginQuorumEpoch). For as long as the node runs, every ``RETRY_S`` it
asks the Raft core whether the latest voter set in its log lists it elsewhere
(``RaftNode.endpoints_to_update``: a follower that is a voter under its own directory) and,
if so, sends UpdateRaftVoter to the leader (answered once the leader wrote it). Not once at
start-up, as Kafka's voters keep comparing too: the record may be lost (the leader died before
a majority held it) or truncated away under a new leader, and the voter asks again. A leader
lists its own endpoints itself at the start of its epoch (raft/voter_changes.py), and writes
the record only once the voter has fetched its whole log (REQUEST_TIMED_OUT until then, and
written when the voter's next Fetch gets there: raft/leader_voters.py says why).
"""
from __future__ import annotations

import asyncio
import logging

from tierlog.net.client import PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.raft.voters import KRAFT_VERSION_DYNAMIC, Endpoint

from .controller_server import ControllerServer

__all__ = ["RETRY_S", "VoterUpdate"]

log = logging.getLogger(__name__)
RETRY_S = 1.0
REQUEST_TIMEOUT_S = 30.0


class VoterUpdate:
    def __init__(self, server: ControllerServer):
        self._server = server
        self._asked = False             # asked since the voter set last listed us where we serve

    async def run(self) -> None:
        node = self._server.driver.node
        if node.kraft_version < KRAFT_VERSION_DYNAMIC:
            return                      # a static quorum lists what controller.quorum.voters says
        while True:
            await self._once()
            await asyncio.sleep(RETRY_S)

    async def _once(self) -> None:
        node = self._server.driver.node
        endpoints = node.endpoints_to_update()
        leader = node.leader_and_epoch.leader_id
        voter = node.voter_set.get(node.node_id)
        if endpoints is None and self._asked and voter is not None:
            self._asked = False
            listed = ", ".join(f"{e.name}://{e.host}:{e.port}" for e in voter.endpoints)
            log.info("voter %d: the voter set in this log lists it at %s", node.node_id, listed)
        if endpoints is None or leader is None or voter is None:
            return                      # listed where we serve, leading, not a voter, or no leader
        self._asked = True
        error = await self._ask(leader, voter.directory_id, endpoints)
        log.debug("UpdateRaftVoter to node %d: error %s", leader, error)

    async def _ask(self, leader: int, directory_id: bytes, endpoints: tuple[Endpoint, ...]) -> int | None:
        """The leader's error code; None when it did not answer."""
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
            return None
        return int(answer["ErrorCode"])
