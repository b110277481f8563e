"""AddRaftVoter (80), RemoveRaftVoter (81) and UpdateRaftVoter (82) at the active controller (KIP-853).

The Raft leader checks Kafka's rules (raft/leader_voters.py: only the leader, only with
kraft.version 1, one change at a time, a new voter caught up as an observer, the
(id, directory id) of a removed voter); here the request is checked and the answer
waits until the VotersRecord is committed (the high watermark passes it), or until
the request's TimeoutMs (AddRaftVoter; at most ``MAX_VOTER_CHANGE_WAIT_S``) with
REQUEST_TIMED_OUT. AddRaftVoter v1's AckWhenCommitted false answers once the leader
wrote the record. Add and remove need ALTER on the cluster, as Kafka's controller asks;
UpdateRaftVoter (a voter telling the leader its new listeners) comes from the nodes, so
it needs CLUSTER_ACTION like the other quorum requests, and its answer names the leader
(CurrentLeader) so a voter that asked another replica can turn to it. It is answered once
written, as Kafka does (the voter keeps comparing its log's voter set, server/voter_update.py).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from tierlog.metadata.acls import CLUSTER_NAME, AclOperation, ResourceType
from tierlog.protocol import ErrorCode
from tierlog.raft.voters import NO_DIRECTORY, Endpoint, Voter

__all__ = ["MAX_VOTER_CHANGE_WAIT_S", "add_raft_voter", "remove_raft_voter", "update_raft_voter"]

log = logging.getLogger(__name__)
#: the longest a voter change's answer waits for the commit (AddRaftVoter's TimeoutMs is capped to it)
MAX_VOTER_CHANGE_WAIT_S = 60.0
#: RemoveRaftVoter names no timeout: it waits this long
REMOVE_VOTER_WAIT_S = 30.0


async def add_raft_voter(server, header, request: Mapping[str, Any]) -> dict[str, Any]:
    refused = _refusal(server, header, request)
    if refused is not None:
        return refused
    listeners = request.get("Listeners") or []
    if not listeners:
        return _answer(ErrorCode.INVALID_REQUEST, "a voter needs at least one listener")
    voter = Voter(request["VoterId"], bytes(request["VoterDirectoryId"]),
                  tuple(Endpoint(x["Name"], x["Host"], x["Port"]) for x in listeners))
    timeout_s = min(max(request.get("TimeoutMs", 0), 0) / 1000 or MAX_VOTER_CHANGE_WAIT_S, MAX_VOTER_CHANGE_WAIT_S)
    return await _change(server, lambda now: server.driver.node.add_voter(voter, now),
                         request.get("AckWhenCommitted", True), timeout_s, f"add voter {voter.voter_id}")


async def remove_raft_voter(server, header, request: Mapping[str, Any]) -> dict[str, Any]:
    refused = _refusal(server, header, request)
    if refused is not None:
        return refused
    voter_id, directory_id = request["VoterId"], bytes(request["VoterDirectoryId"])
    return await _change(server, lambda now: server.driver.node.remove_voter(voter_id, directory_id, now),
                         True, REMOVE_VOTER_WAIT_S, f"remove voter {voter_id}")


async def update_raft_voter(server, header, request: Mapping[str, Any]) -> dict[str, Any]:
    refused = _refusal(server, header, request, AclOperation.CLUSTER_ACTION)
    if refused is None:
        voter_id, directory_id = request["VoterId"], bytes(request["VoterDirectoryId"])
        endpoints = tuple(Endpoint(x["Name"], x["Host"], x["Port"]) for x in request.get("Listeners") or [])
        # answered once written, as Kafka does: held until the commit, the answer would hold up the
        # voter's Fetch answers queued behind it on the same connection, the fetches that commit it
        refused = await _change(server, lambda now: server.driver.node.update_voter(voter_id, directory_id,
                                                                                   endpoints, now),
                                False, REMOVE_VOTER_WAIT_S, f"update voter {voter_id}")
    return {"ThrottleTimeMs": 0, "ErrorCode": refused["ErrorCode"], "CurrentLeader": _current_leader(server)}


def _current_leader(server) -> dict[str, Any]:
    leader = server.driver.node.leader_and_epoch
    voter = server.driver.node.voter_set.get(leader.leader_id) if leader.leader_id is not None else None
    endpoint = voter.endpoints[0] if voter is not None and voter.endpoints else None
    return {"LeaderId": -1 if leader.leader_id is None else leader.leader_id, "LeaderEpoch": leader.epoch,
            "Host": endpoint.host if endpoint else "", "Port": endpoint.port if endpoint else -1}


def _refusal(server, header, request: Mapping[str, Any],
             operation: AclOperation = AclOperation.ALTER) -> dict[str, Any] | None:
    principal = getattr(header, "principal", None)
    if server.authorizer is not None and principal is not None and not server.authorizer.authorize(
            server.quorum_controller.committed_image.acls, principal, header.client_host, operation,
            ResourceType.CLUSTER, CLUSTER_NAME):
        return _answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    cluster_id = request.get("ClusterId")
    if cluster_id is not None and cluster_id != server.driver.node.config.cluster_id:
        return _answer(ErrorCode.INCONSISTENT_CLUSTER_ID)
    if bytes(request["VoterDirectoryId"]) == NO_DIRECTORY:
        return _answer(ErrorCode.INVALID_REQUEST, "a voter of a dynamic quorum has a directory id")
    return None


async def _change(server, change: Callable[[int], tuple[int, int | None]], ack_when_committed: bool,
                  timeout_s: float, what: str) -> dict[str, Any]:
    error, offset = server.change_voters(change)
    if error != ErrorCode.NONE or offset is None or not ack_when_committed:
        return _answer(error)
    try:
        await server.driver.committed(offset, timeout_s)
    except TimeoutError:
        log.info("%s: the VotersRecord at %d was not committed within %.0fs", what, offset, timeout_s)
        return _answer(ErrorCode.REQUEST_TIMED_OUT, f"the new voter set was not committed within {timeout_s:.0f}s")
    log.info("%s: the VotersRecord at %d is committed", what, offset)
    return _answer(ErrorCode.NONE)


def _answer(error: int, message: str | None = None) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": int(error), "ErrorMessage": message}
