"""KIP-951 leader discovery: the CurrentLeader and NodeEndpoints that ride on errors.

KIP-951 "Broker": on NOT_LEADER_OR_FOLLOWER (Produce, Fetch) and
FENCED_LEADER_EPOCH (Fetch) the response names the partition's current leader
and epoch, from the partition state or else the metadata image, and the
top-level NodeEndpoints lists that leader's endpoint, so the client redirects
without waiting for a metadata refresh. As Kafka's getAliveBrokerNode: the
endpoint is the one on the listener the request came in on, and a leader that is
fenced or has no endpoint there is named in CurrentLeader but left out of
NodeEndpoints (the client then refreshes metadata).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from tierlog.protocol.typed.fetch import FetchLeaderIdAndEpoch, FetchNodeEndpoint

__all__ = ["HINTED_ERRORS", "LeaderHints"]

HINTED_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})
NO_LEADER: FetchLeaderIdAndEpoch = {"LeaderId": -1, "LeaderEpoch": -1}


class LeaderHints:
    """Collects the leaders named in one response and renders NodeEndpoints."""

    def __init__(self, broker, listener: str | None = None):
        self._broker = broker
        self._listener = listener
        self._nodes: set[int] = set()

    # Fetch's types; Produce's ProduceLeaderIdAndEpoch and ProduceNodeEndpoint have the same keys
    def current_leader(self, topic: str, partition: int) -> FetchLeaderIdAndEpoch:
        part = self._broker.replicas.get(topic, partition)
        if part is not None:
            leader, epoch = part.leader_id, part.leader_epoch
        else:
            info = self._broker.image.topics.get(topic)
            if info is None or partition >= len(info.partitions):
                return NO_LEADER.copy()
            p = info.partitions[partition]
            leader, epoch = p.leader, p.leader_epoch
        if leader >= 0:
            self._nodes.add(leader)
        return {"LeaderId": leader, "LeaderEpoch": epoch}

    def node_endpoints(self) -> list[FetchNodeEndpoint]:
        out: list[FetchNodeEndpoint] = []
        if not self._nodes:             # no leader named (most answers)
            return out
        for node_id in sorted(self._nodes):
            b = self._broker.endpoint(node_id)
            address = None if b is None or b.fenced else b.address(self._listener)
            if address is not None:
                out.append({"NodeId": b.node_id, "Host": address[0], "Port": address[1], "Rack": b.rack})
        return out
