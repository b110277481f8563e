"""Where a dynamic quorum's replicas are (KIP-853): the Raft driver's peer map follows them.

A static quorum (kraft.version 0) takes every address from ``controller.quorum.voters``;
nothing here changes it. With kraft.version 1 the voters are whatever the latest
VotersRecord says, so:

- each voter's endpoint on the controller listener (``listener_name``) is put in the
  peer map whenever the voter set in effect changes;
- a Fetch answer names the leader's endpoint (the response's NodeEndpoints tag, Fetch
  v16+, as Kafka's leader sends it: a leader its own listener, whatever its voter set
  lists), so a replica that only knows ``controller.quorum.bootstrap.servers`` learns
  where the leader it was told of is;
- the leader of the epoch is reached where the Raft core says it serves
  (``RaftNode.leader_endpoints``: what it said in BeginQuorumEpoch v1), over what the
  voter set lists: a voter that missed the VotersRecord moving the new leader's port
  still fetches from it;
- every address learned also goes to the peer maps ``share_with`` names (the node's
  controller channels, so a broker reaches the active controller the image names).
"""
from __future__ import annotations

from typing import Any

from tierlog.net.client import Peers
from tierlog.raft.node import RaftNode
from tierlog.raft.voters import KRAFT_VERSION_DYNAMIC, Endpoint, VoterSet

__all__ = ["QuorumEndpoints"]


class QuorumEndpoints:
    def __init__(self, peers: Peers, node: RaftNode, listener_name: str):
        self._peers = peers
        self._node = node
        self._listener = listener_name.upper()
        self._seen: VoterSet | None = None
        self._shared: list[Peers] = []

    def share_with(self, peers: Peers) -> None:
        """Keep ``peers`` told of every voter address learned from now on (and those known)."""
        self._shared.append(peers)
        for node_id, (host, port) in self._peers.addresses.items():
            peers.set_address(node_id, host, port)

    @property
    def dynamic(self) -> bool:
        return self._node.kraft_version >= KRAFT_VERSION_DYNAMIC

    def follow_voters(self) -> None:
        """Put every voter's controller endpoint in the peer map when the set in effect changed."""
        if not self.dynamic:
            return
        voters = self._node.voter_set
        if voters == self._seen:
            return
        self._seen = voters
        for voter in voters:
            endpoint = self._endpoint(voter.endpoints)
            if endpoint is not None and voter.voter_id != self._node.node_id:
                self._set(voter.voter_id, endpoint.host, endpoint.port)

    def follow_leader(self) -> None:
        """Reach the leader of the epoch where the core says it serves (over the voter set's listing)."""
        leader_id = self._node.leader_and_epoch.leader_id
        if not self.dynamic or leader_id is None or leader_id == self._node.node_id:
            return
        endpoint = self._endpoint(self._node.leader_endpoints())
        voter = self._node.voter_set.get(leader_id)
        if endpoint is None or (voter is not None and endpoint == self._endpoint(voter.endpoints)):
            return          # what the set lists (follow_voters), or a Fetch answer taught us better
        if self._peers.addresses.get(leader_id) != (endpoint.host, endpoint.port):
            self._set(leader_id, endpoint.host, endpoint.port)

    def leader_endpoints(self, leader_id: int) -> list[dict[str, Any]]:
        """A Fetch answer's NodeEndpoints: the leader's controller endpoint, when known."""
        if not self.dynamic or leader_id < 0:
            return []
        if leader_id == self._node.leader_and_epoch.leader_id:
            endpoints = self._node.leader_endpoints()
        else:
            voter = self._node.voter_set.get(leader_id)
            endpoints = voter.endpoints if voter is not None else ()
        endpoint = self._endpoint(endpoints)
        if endpoint is None:
            return []
        return [{"NodeId": leader_id, "Host": endpoint.host, "Port": endpoint.port, "Rack": None}]

    def learn(self, fetch_response: dict[str, Any]) -> None:
        """Take the endpoints a Fetch answer names (a dynamic quorum's replicas only)."""
        if not self.dynamic:
            return
        for e in fetch_response.get("NodeEndpoints") or []:
            if e["NodeId"] >= 0 and e["NodeId"] != self._node.node_id:
                self._set(e["NodeId"], e["Host"], e["Port"])

    def _set(self, node_id: int, host: str, port: int) -> None:
        for peers in (self._peers, *self._shared):
            peers.set_address(node_id, host, port)

    def _endpoint(self, endpoints: tuple[Endpoint, ...]) -> Endpoint | None:
        return next((e for e in endpoints if e.name.upper() == self._listener), None)
