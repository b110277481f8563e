"""raft.wire through the real codec: every quorum message survives encode/decode."""

import pytest

from tierlog.protocol.header import decode_request_header
from tierlog.protocol.wire import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from tierlog.raft import wire
from tierlog.raft.messages import (
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
from tierlog.raft.types import LogBatch, OffsetAndEpoch, QuorumInfo, ReplicaInfo
from tierlog.raft.voters import Endpoint


def _request_round_trip(req):
    key, body = wire.request_to_dict(req)
    version = wire.VERSIONS[key]
    frame = encode_request(key, version, 7, "raft", body)
    header, offset = decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (key, version, 7)
    return wire.request_from_dict(key, decode_request(key, version, frame, offset))


def _response_round_trip(resp):
    key, body = wire.response_to_dict(resp)
    version = wire.VERSIONS[key]
    parts = encode_response(key, version, 9, body)
    frame = b"".join(bytes(p) if not hasattr(p, "read") else p.read() for p in parts)
    cid, decoded = decode_response(key, version, frame)
    assert cid == 9
    return wire.response_from_dict(key, decoded)


REQUESTS = [
    VoteRequest("c1", 5, 2, 4, 100),
    VoteRequest("c1", 5, 2, 4, 100, bytes(range(16)), pre_vote=True),   # KIP-853 / KIP-996 (Vote v2)
    BeginQuorumEpochRequest("c1", 3, 6),
    BeginQuorumEpochRequest("c1", 3, 6, 2, bytes(range(16)), (Endpoint("CONTROLLER", "h", 9093),)),  # KIP-853 v1
    EndQuorumEpochRequest("c1", 3, 6, (2, 1)),
    FetchRequest("c1", 4, 6, 120, 5, 40, 500, 1 << 20),
    FetchSnapshotRequest("c1", 4, 6, OffsetAndEpoch(100, 5), 64, 4096),
]


@pytest.mark.parametrize("req", REQUESTS, ids=lambda r: type(r).__name__)
def test_requests_round_trip(req):
    got = _request_round_trip(req)
    assert type(got) is type(req)
    assert {k: getattr(got, k) for k in req.__dataclass_fields__} == \
        {k: getattr(req, k) for k in req.__dataclass_fields__}


BATCHES = (LogBatch(120, 5, 1000, (b"a", b"bc")), LogBatch(122, 6, 1001, (b"\x00\x01",), True))
RESPONSES = [
    VoteResponse(0, 3, 6, True),
    VoteResponse(74, -1, 7, False),
    VoteResponse(104, -1, -1, False),
    BeginQuorumEpochResponse(0, 3, 6),
    EndQuorumEpochResponse(75, 3, 6),
    FetchResponse(0, 3, 6, 110, 40, BATCHES),
    FetchResponse(0, 3, 6, 110, 40, (), diverging_epoch=OffsetAndEpoch(118, 4)),
    FetchResponse(0, 3, 6, 110, 40, (), snapshot_id=OffsetAndEpoch(100, 5)),
    FetchResponse(6, 3, 6),
    FetchResponse(104, -1, -1),
    FetchSnapshotResponse(0, 3, 6, OffsetAndEpoch(100, 5), 250, 64, b"\x01" * 64),
    FetchSnapshotResponse(98, 3, 6, OffsetAndEpoch(100, 5)),
]


@pytest.mark.parametrize("resp", RESPONSES, ids=lambda r: type(r).__name__)
def test_responses_round_trip(resp):
    got = _response_round_trip(resp)
    assert type(got) is type(resp)
    assert {k: getattr(got, k) for k in resp.__dataclass_fields__} == \
        {k: getattr(resp, k) for k in resp.__dataclass_fields__}


def test_fetch_uses_the_metadata_topic_id_and_replica_state():
    key, body = wire.request_to_dict(next(r for r in REQUESTS if isinstance(r, FetchRequest)))
    assert key == 1 and wire.VERSIONS[1] >= 15
    assert body["Topics"][0]["TopicId"] == wire.METADATA_TOPIC_ID
    assert body["ReplicaState"]["ReplicaId"] == 4


def test_describe_quorum_encodes():
    info = QuorumInfo(0, 1, 3, 50, [ReplicaInfo(1, 50, 10, 10), ReplicaInfo(2, 40, 9, 5)], [ReplicaInfo(7, 30, 8, -1)])
    body = wire.describe_quorum_to_dict(info)
    parts = encode_response(55, wire.VERSIONS[55], 1, body)
    _, decoded = decode_response(55, wire.VERSIONS[55], b"".join(bytes(p) for p in parts))
    part = decoded["Topics"][0]["Partitions"][0]
    assert part["HighWatermark"] == 50 and [v["ReplicaId"] for v in part["CurrentVoters"]] == [1, 2]
    assert part["Observers"][0]["LastCaughtUpTimestamp"] == -1


def test_describe_quorum_v2_carries_directory_ids_and_endpoints_and_v0_still_encodes():
    """KIP-853's DescribeQuorum v2: each voter's directory id, and Nodes with its listeners."""
    d1 = bytes([1]) * 16
    info = QuorumInfo(0, 1, 3, 50, [ReplicaInfo(1, 50, 10, 10, d1)], [ReplicaInfo(7, 30, 8, -1)],
                      {1: (("CONTROLLER", "h1", 9093),)})
    body = wire.describe_quorum_to_dict(info)
    for version in (0, 1, 2):
        parts = encode_response(55, version, 1, body)
        _, decoded = decode_response(55, version, b"".join(bytes(p) for p in parts))
        part = decoded["Topics"][0]["Partitions"][0]
        assert part["CurrentVoters"][0]["ReplicaId"] == 1
    assert part["CurrentVoters"][0]["ReplicaDirectoryId"] == d1
    assert decoded["Nodes"] == [{"NodeId": 1, "Listeners": [{"Name": "CONTROLLER", "Host": "h1", "Port": 9093}]}]


def test_vote_v0_is_still_read_as_a_real_vote_of_no_directory():
    """A Vote v0 (no VoterDirectoryId, no PreVote: a static quorum's peer) decodes as a real
    vote asked of any directory; the controller listener accepts it (MIN_VERSIONS)."""
    key, body = wire.request_to_dict(VoteRequest("c1", 5, 2, 4, 100, bytes(range(16)), pre_vote=True))
    assert wire.MIN_VERSIONS[key] == 0
    frame = encode_request(key, 0, 7, "raft", body)
    _, offset = decode_request_header(frame)
    got = wire.request_from_dict(key, decode_request(key, 0, frame, offset))
    assert (got.candidate_epoch, got.voter_directory_id, got.pre_vote) == (5, None, False)
