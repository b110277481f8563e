"""The quorum's dataclasses <-> tierlog protocol dicts (Kafka's field names).

Versions we send (``VERSIONS``): Vote 52 v2 (KIP-853's VoterDirectoryId, KIP-996's PreVote;
v0-v2 are accepted, ``MIN_VERSIONS``), BeginQuorumEpoch 53 v1 (KIP-853's VoterId,
VoterDirectoryId and LeaderEndpoints; v0 accepted),
EndQuorumEpoch 54 v0, Fetch 1 v18 (ReplicaState tag, topic ids, KIP-853's ReplicaDirectoryId
tag, KIP-1166's HighWatermark tag), FetchSnapshot 59 v0, DescribeQuorum 55 v1. The partition
is ``__cluster_metadata``-0; Fetch uses its topic id (Kafka's METADATA_TOPIC_ID, 0...01). A peer answering with a
top-level error (e.g. INCONSISTENT_CLUSTER_ID, no partitions) decodes to a
response with that error and leader -1 / epoch -1.

A request that names no partition, or another partition than ours, raises
``InvalidQuorumRequest``; the receiving shell answers it with
``invalid_request_response`` (top-level INVALID_REQUEST, as Kafka's
KafkaRaftClient treats a topic partition mismatch).

Usage by the shell::

    api_key, body = request_to_dict(request)          # send with VERSIONS[api_key]
    request = request_from_dict(api_key, body)        # on the receiving side
    api_key, body = response_to_dict(response)
    response = response_from_dict(api_key, body)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.raft.codec import decode_log_batches, encode_log_batches
from tierlog.raft.messages import (
    HIGH_WATERMARK_UNKNOWN,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)
from tierlog.raft.types import OffsetAndEpoch, QuorumInfo, ReplicaInfo
from tierlog.raft.voters import NO_DIRECTORY, Endpoint

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_quorum import (
        DescribeQuorumReplicaState,
        DescribeQuorumResponse,
        DescribeQuorumResponsePartitionData,
    )
    from tierlog.protocol.typed.describe_quorum import (
        Node as DescribeQuorumNode,
    )

__all__ = [
    "API_KEYS",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "MIN_VERSIONS",
    "VERSIONS",
    "InvalidQuorumRequest",
    "describe_quorum_to_dict",
    "invalid_request_response",
    "request_from_dict",
    "request_to_dict",
    "response_from_dict",
    "response_to_dict",
]

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = bytes(15) + b"\x01"
VERSIONS = {ApiKey.FETCH: 18, ApiKey.VOTE: 2, ApiKey.BEGIN_QUORUM_EPOCH: 1, ApiKey.END_QUORUM_EPOCH: 0,
            ApiKey.DESCRIBE_QUORUM: 1, ApiKey.FETCH_SNAPSHOT: 0}
#: the oldest version each quorum API is answered at (default: the one version we send)
MIN_VERSIONS = {ApiKey.VOTE: 0, ApiKey.BEGIN_QUORUM_EPOCH: 0}
API_KEYS = {
    FetchRequest: ApiKey.FETCH, FetchResponse: ApiKey.FETCH, VoteRequest: ApiKey.VOTE, VoteResponse: ApiKey.VOTE,
    BeginQuorumEpochRequest: ApiKey.BEGIN_QUORUM_EPOCH, BeginQuorumEpochResponse: ApiKey.BEGIN_QUORUM_EPOCH,
    EndQuorumEpochRequest: ApiKey.END_QUORUM_EPOCH, EndQuorumEpochResponse: ApiKey.END_QUORUM_EPOCH,
    FetchSnapshotRequest: ApiKey.FETCH_SNAPSHOT, FetchSnapshotResponse: ApiKey.FETCH_SNAPSHOT,
}


QuorumRequest = VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest | FetchSnapshotRequest
QuorumResponse = (VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse
                  | FetchSnapshotResponse)


class InvalidQuorumRequest(ValueError):
    """A quorum request that does not name ``__cluster_metadata``-0 (a protocol error, not a crash)."""


_RESULT_LISTS = {ApiKey.VOTE: "Topics", ApiKey.BEGIN_QUORUM_EPOCH: "Topics", ApiKey.END_QUORUM_EPOCH: "Topics",
                 ApiKey.FETCH: "Responses", ApiKey.FETCH_SNAPSHOT: "Topics"}


def invalid_request_response(api_key: int) -> dict[str, Any]:
    """The answer to an ``InvalidQuorumRequest``: top-level INVALID_REQUEST, no partitions."""
    return {"ErrorCode": ErrorCode.INVALID_REQUEST, _RESULT_LISTS[ApiKey(api_key)]: []}


def _topic(partition: dict[str, Any], name_field: str = "TopicName",
           name: str | bytes = METADATA_TOPIC) -> list[dict[str, Any]]:
    return [{name_field: name, "Partitions": [partition]}]


def _partition(body: dict[str, Any], topics_field: str = "Topics") -> dict[str, Any] | None:
    topics = body.get(topics_field) or []
    for t in topics:
        for p in t.get("Partitions") or []:
            partition: dict[str, Any] = p
            return partition
    return None


def _our_partition(api_key: int, body: dict[str, Any]) -> dict[str, Any]:
    """The one partition a quorum request names, which must be ``__cluster_metadata``-0."""
    topics = body.get("Topics") or []
    if len(topics) != 1 or len(topics[0].get("Partitions") or []) != 1:
        raise InvalidQuorumRequest(f"api {api_key} request must name exactly one partition")
    topic = topics[0]
    named = topic.get("TopicName", topic.get("Name")) == METADATA_TOPIC or topic.get("TopicId") == METADATA_TOPIC_ID
    partition: dict[str, Any] = topic["Partitions"][0]
    if not named or partition.get("PartitionIndex", partition.get("Partition")) != 0:
        raise InvalidQuorumRequest(f"api {api_key} request names a partition other than {METADATA_TOPIC}-0")
    return partition


# ---------------------------------------------------------------------------- requests

def request_to_dict(req: object) -> tuple[int, dict[str, Any]]:
    if isinstance(req, VoteRequest):
        return ApiKey.VOTE, {"ClusterId": req.cluster_id, "Topics": _topic({
            "PartitionIndex": 0, "ReplicaEpoch": req.candidate_epoch, "ReplicaId": req.candidate_id,
            "ReplicaDirectoryId": NO_DIRECTORY, "VoterDirectoryId": req.voter_directory_id or NO_DIRECTORY,
            "LastOffsetEpoch": req.last_offset_epoch, "LastOffset": req.last_offset, "PreVote": req.pre_vote})}
    if isinstance(req, BeginQuorumEpochRequest):
        return ApiKey.BEGIN_QUORUM_EPOCH, {
            "ClusterId": req.cluster_id, "VoterId": req.voter_id, "Topics": _topic({
                "PartitionIndex": 0, "VoterDirectoryId": req.voter_directory_id or NO_DIRECTORY,
                "LeaderId": req.leader_id, "LeaderEpoch": req.leader_epoch}),
            "LeaderEndpoints": [{"Name": e.name, "Host": e.host, "Port": e.port} for e in req.leader_endpoints]}
    if isinstance(req, EndQuorumEpochRequest):
        return ApiKey.END_QUORUM_EPOCH, {"ClusterId": req.cluster_id, "Topics": _topic({
            "PartitionIndex": 0, "LeaderId": req.leader_id, "LeaderEpoch": req.leader_epoch,
            "PreferredSuccessors": list(req.preferred_successors)})}
    if isinstance(req, FetchRequest):
        return ApiKey.FETCH, {
            "ClusterId": req.cluster_id, "ReplicaState": {"ReplicaId": req.replica_id, "ReplicaEpoch": -1},
            "MaxWaitMs": req.max_wait_ms, "MinBytes": 0, "MaxBytes": req.max_bytes, "IsolationLevel": 0,
            "SessionId": 0, "SessionEpoch": -1, "ForgottenTopicsData": [], "RackId": "",
            "Topics": _topic({
                "Partition": 0, "CurrentLeaderEpoch": req.current_leader_epoch, "FetchOffset": req.fetch_offset,
                "LastFetchedEpoch": req.last_fetched_epoch, "LogStartOffset": req.log_start_offset,
                "PartitionMaxBytes": req.max_bytes, "HighWatermark": req.high_watermark,
                "ReplicaDirectoryId": req.replica_directory_id or NO_DIRECTORY},
                "TopicId", METADATA_TOPIC_ID)}
    if isinstance(req, FetchSnapshotRequest):
        return ApiKey.FETCH_SNAPSHOT, {
            "ClusterId": req.cluster_id, "ReplicaId": req.replica_id, "MaxBytes": req.max_bytes,
            "Topics": _topic({
                "Partition": 0, "CurrentLeaderEpoch": req.current_leader_epoch,
                "SnapshotId": {"EndOffset": req.snapshot_id.offset, "Epoch": req.snapshot_id.epoch},
                "Position": req.position}, "Name")}
    raise TypeError(f"not a quorum request: {req!r}")


def request_from_dict(api_key: int, body: dict[str, Any]) -> QuorumRequest:
    """The dataclass for a decoded request body; InvalidQuorumRequest unless it names our partition."""
    p = _our_partition(api_key, body)
    cluster = body.get("ClusterId") or ""
    if api_key == ApiKey.VOTE:
        voter_directory = p.get("VoterDirectoryId") or NO_DIRECTORY
        return VoteRequest(cluster, p["ReplicaEpoch"], p["ReplicaId"], p["LastOffsetEpoch"], p["LastOffset"],
                           None if voter_directory == NO_DIRECTORY else bytes(voter_directory),
                           bool(p.get("PreVote", False)))
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return BeginQuorumEpochRequest(cluster, p["LeaderId"], p["LeaderEpoch"], body.get("VoterId", -1),
                                       _directory(p.get("VoterDirectoryId")),
                                       tuple(Endpoint(e["Name"], e["Host"], e["Port"])
                                             for e in body.get("LeaderEndpoints") or ()))
    if api_key == ApiKey.END_QUORUM_EPOCH:
        return EndQuorumEpochRequest(cluster, p["LeaderId"], p["LeaderEpoch"],
                                     tuple(p.get("PreferredSuccessors") or ()))
    if api_key == ApiKey.FETCH:
        state = body.get("ReplicaState") or {}
        replica = state.get("ReplicaId", body.get("ReplicaId", -1))
        return FetchRequest(cluster, replica, p.get("CurrentLeaderEpoch", -1), p["FetchOffset"],
                            p.get("LastFetchedEpoch", -1), p.get("LogStartOffset", -1), body.get("MaxWaitMs", 0),
                            min(body.get("MaxBytes", 0x7FFFFFFF), p.get("PartitionMaxBytes", 0x7FFFFFFF)),
                            p.get("HighWatermark", HIGH_WATERMARK_UNKNOWN), _directory(p.get("ReplicaDirectoryId")))
    if api_key == ApiKey.FETCH_SNAPSHOT:
        sid = p["SnapshotId"]
        return FetchSnapshotRequest(cluster, body.get("ReplicaId", -1), p["CurrentLeaderEpoch"],
                                    OffsetAndEpoch(sid["EndOffset"], sid["Epoch"]), p["Position"],
                                    body.get("MaxBytes", 0x7FFFFFFF))
    raise ValueError(f"not a quorum api: {api_key}")


def _directory(value: bytes | None) -> bytes | None:
    """A directory id field: None when absent or Kafka's zero Uuid."""
    return None if not value or bytes(value) == NO_DIRECTORY else bytes(value)


# ---------------------------------------------------------------------------- responses

def response_to_dict(resp: object) -> tuple[int, dict[str, Any]]:
    if isinstance(resp, VoteResponse):
        if resp.error == ErrorCode.INCONSISTENT_CLUSTER_ID:
            return ApiKey.VOTE, {"ErrorCode": resp.error, "Topics": []}
        return ApiKey.VOTE, {"ErrorCode": ErrorCode.NONE, "Topics": _topic({
            "PartitionIndex": 0, "ErrorCode": resp.error, "LeaderId": resp.leader_id,
            "LeaderEpoch": resp.leader_epoch, "VoteGranted": resp.vote_granted})}
    if isinstance(resp, (BeginQuorumEpochResponse, EndQuorumEpochResponse)):
        key = ApiKey.BEGIN_QUORUM_EPOCH if isinstance(resp, BeginQuorumEpochResponse) else ApiKey.END_QUORUM_EPOCH
        if resp.error == ErrorCode.INCONSISTENT_CLUSTER_ID:
            return key, {"ErrorCode": resp.error, "Topics": []}
        return key, {"ErrorCode": ErrorCode.NONE, "Topics": _topic({
            "PartitionIndex": 0, "ErrorCode": resp.error, "LeaderId": resp.leader_id,
            "LeaderEpoch": resp.leader_epoch})}
    if isinstance(resp, FetchResponse):
        return ApiKey.FETCH, _fetch_response_to_dict(resp)
    if isinstance(resp, FetchSnapshotResponse):
        if resp.error == ErrorCode.INCONSISTENT_CLUSTER_ID:
            return ApiKey.FETCH_SNAPSHOT, {"ThrottleTimeMs": 0, "ErrorCode": resp.error, "Topics": []}
        sid = resp.snapshot_id or OffsetAndEpoch(-1, -1)
        return ApiKey.FETCH_SNAPSHOT, {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "Topics": _topic({
            "Index": 0, "ErrorCode": resp.error, "SnapshotId": {"EndOffset": sid.offset, "Epoch": sid.epoch},
            "CurrentLeader": {"LeaderId": resp.leader_id, "LeaderEpoch": resp.leader_epoch},
            "Size": resp.size, "Position": resp.position, "UnalignedRecords": resp.data}, "Name")}
    raise TypeError(f"not a quorum response: {resp!r}")


def _fetch_response_to_dict(resp: FetchResponse) -> dict[str, Any]:
    if resp.error == ErrorCode.INCONSISTENT_CLUSTER_ID:
        return {"ThrottleTimeMs": 0, "ErrorCode": resp.error, "SessionId": 0, "Responses": []}
    part: dict[str, Any] = {
        "PartitionIndex": 0, "ErrorCode": resp.error, "HighWatermark": resp.high_watermark,
        "LastStableOffset": -1, "LogStartOffset": resp.log_start_offset,
        "CurrentLeader": {"LeaderId": resp.leader_id, "LeaderEpoch": resp.leader_epoch},
        "AbortedTransactions": None, "PreferredReadReplica": -1,
        "Records": encode_log_batches(resp.batches),
    }
    if resp.diverging_epoch is not None:
        part["DivergingEpoch"] = {"Epoch": resp.diverging_epoch.epoch, "EndOffset": resp.diverging_epoch.offset}
    if resp.snapshot_id is not None:
        part["SnapshotId"] = {"EndOffset": resp.snapshot_id.offset, "Epoch": resp.snapshot_id.epoch}
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "SessionId": 0,
            "Responses": _topic(part, "TopicId", METADATA_TOPIC_ID)}


def response_from_dict(api_key: int, body: dict[str, Any]) -> QuorumResponse:
    """The dataclass for a decoded response body (record batches CRC-checked)."""
    p = _partition(body, "Responses" if api_key == ApiKey.FETCH else "Topics")
    top = body.get("ErrorCode", ErrorCode.NONE)
    if api_key == ApiKey.VOTE:
        if p is None:
            return VoteResponse(top or ErrorCode.INVALID_REQUEST, -1, -1, False)
        return VoteResponse(p["ErrorCode"], p["LeaderId"], p["LeaderEpoch"], bool(p["VoteGranted"]))
    if api_key in (ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH):
        cls = BeginQuorumEpochResponse if api_key == ApiKey.BEGIN_QUORUM_EPOCH else EndQuorumEpochResponse
        if p is None:
            return cls(top or ErrorCode.INVALID_REQUEST, -1, -1)
        return cls(p["ErrorCode"], p["LeaderId"], p["LeaderEpoch"])
    if api_key == ApiKey.FETCH:
        if p is None:
            return FetchResponse(top or ErrorCode.INVALID_REQUEST, -1, -1)
        leader = p.get("CurrentLeader") or {}
        div = p.get("DivergingEpoch")
        snap = p.get("SnapshotId")
        records = p.get("Records")
        return FetchResponse(
            p["ErrorCode"], leader.get("LeaderId", -1), leader.get("LeaderEpoch", -1), p["HighWatermark"],
            p.get("LogStartOffset", -1), tuple(decode_log_batches(records)) if records else (),
            OffsetAndEpoch(div["EndOffset"], div["Epoch"]) if div and div.get("EndOffset", -1) >= 0 else None,
            OffsetAndEpoch(snap["EndOffset"], snap["Epoch"]) if snap and snap.get("EndOffset", -1) >= 0 else None)
    if api_key == ApiKey.FETCH_SNAPSHOT:
        if p is None:
            return FetchSnapshotResponse(top or ErrorCode.INVALID_REQUEST, -1, -1)
        leader = p.get("CurrentLeader") or {}
        sid = p["SnapshotId"]
        return FetchSnapshotResponse(p["ErrorCode"], leader.get("LeaderId", -1), leader.get("LeaderEpoch", -1),
                                     OffsetAndEpoch(sid["EndOffset"], sid["Epoch"]), p["Size"], p["Position"],
                                     bytes(p.get("UnalignedRecords") or b""))
    raise ValueError(f"not a quorum api: {api_key}")


def describe_quorum_to_dict(info: QuorumInfo) -> DescribeQuorumResponse:
    """DescribeQuorum response body (every version's fields; v2's ReplicaDirectoryId and
    Nodes, KIP-853) from ``RaftNode.describe(now_ms)``."""

    def replica(r: ReplicaInfo) -> DescribeQuorumReplicaState:
        return {"ReplicaId": r.replica_id, "ReplicaDirectoryId": r.directory_id, "LogEndOffset": r.log_end_offset,
                "LastFetchTimestamp": r.last_fetch_timestamp, "LastCaughtUpTimestamp": r.last_caught_up_timestamp}

    partition: DescribeQuorumResponsePartitionData = {
        "PartitionIndex": 0, "ErrorCode": info.error, "LeaderId": info.leader_id, "LeaderEpoch": info.leader_epoch,
        "HighWatermark": info.high_watermark, "CurrentVoters": [replica(r) for r in info.voters],
        "Observers": [replica(r) for r in info.observers]}
    nodes: list[DescribeQuorumNode] = [
        {"NodeId": node_id, "Listeners": [{"Name": n, "Host": h, "Port": p} for n, h, p in endpoints]}
        for node_id, endpoints in sorted(info.nodes.items())]
    return {"ErrorCode": ErrorCode.NONE, "ErrorMessage": None,
            "Topics": [{"TopicName": METADATA_TOPIC, "Partitions": [partition]}], "Nodes": nodes}
