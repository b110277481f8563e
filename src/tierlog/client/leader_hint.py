"""KIP-951 "Client": follow the new leader a Fetch (or Produce) error names, without IO.

A broker answering NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH may name the
partition's current leader (``CurrentLeader {LeaderId, LeaderEpoch}``) and list
that leader's endpoint in the response's top-level ``NodeEndpoints``. The client
takes the hint only when all of these hold:

- the error is one of those two;
- the hint is complete: LeaderId >= 0 and LeaderEpoch >= 0;
- it advances the client's view: LeaderEpoch > the cached leader epoch of the
  partition (an equal or older epoch is no news, or stale);
- the node can be reached: it is in the cached brokers, or the response's
  NodeEndpoints gives its endpoint (which then overrides the cached one).

A hint taken is retried at once against the new leader (no backoff); a metadata
refresh is still asked for, but the retry does not wait for it. A hint that does
not qualify changes nothing: the caller refreshes metadata and backs off.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass

from tierlog.protocol.errors import ErrorCode

__all__ = ["HINTED_ERRORS", "LeaderUpdate", "leader_update"]

HINTED_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


@dataclass(frozen=True)
class LeaderUpdate:
    """The partition's new leader and epoch; ``endpoint`` (host, port) when the response gave one."""

    leader: int
    leader_epoch: int
    endpoint: tuple[str, int] | None = None


def leader_update(error_code: int, current_leader: dict | None, cached_epoch: int,
                  known_brokers: Container[int], node_endpoints: Iterable[dict] = ()) -> LeaderUpdate | None:
    """The update a partition's error answer asks for, or None when the hint does not qualify."""
    if error_code not in HINTED_ERRORS or not current_leader:
        return None
    leader = current_leader.get("LeaderId", -1)
    epoch = current_leader.get("LeaderEpoch", -1)
    if leader < 0 or epoch < 0:              # incomplete: the old leader did not know
        return None
    if epoch <= cached_epoch:                # KIP-951 "Client": only a hint that advances our view
        return None
    endpoint = next(((e["Host"], e["Port"]) for e in node_endpoints or () if e.get("NodeId") == leader), None)
    if endpoint is None and leader not in known_brokers:
        return None                          # a node we cannot reach: full metadata refresh
    return LeaderUpdate(leader, epoch, endpoint)
