"""The quorum's requests and responses as frozen dataclasses (wire.py maps them to Kafka dicts).

Every response carries the responder's view of the leader (``leader_id`` -1 when
unknown, ``leader_epoch``), as Kafka's do, so any exchange can teach a replica a
newer epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierlog.raft.types import LogBatch, OffsetAndEpoch
from tierlog.raft.voters import Endpoint

__all__ = [
    "BeginQuorumEpochRequest", "BeginQuorumEpochResponse", "EndQuorumEpochRequest",
    "EndQuorumEpochResponse", "FetchRequest", "FetchResponse", "FetchSnapshotRequest",
    "FetchSnapshotResponse", "VoteRequest", "VoteResponse",
]


@dataclass(frozen=True, eq=False)
class VoteRequest:  # api key 52
    cluster_id: str
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int  # the candidate's log end offset (exclusive)
    #: KIP-853 (Vote v1+ VoterDirectoryId): the receiver's directory id as the candidate's
    #: voter set has it; a replica with another directory (its disk was wiped) refuses
    voter_directory_id: bytes | None = None
    #: KIP-996 (Vote v2 PreVote): ask whether the voter WOULD vote in ``candidate_epoch``;
    #: nothing changes at the voter, no vote is recorded
    pre_vote: bool = False


@dataclass(frozen=True, eq=False)
class VoteResponse:
    error: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True, eq=False)
class BeginQuorumEpochRequest:  # api key 53
    cluster_id: str
    leader_id: int
    leader_epoch: int
    #: KIP-853 (v1): the receiver's voter key as the leader's voter set has it (-1 / None: unknown)
    voter_id: int = -1
    voter_directory_id: bytes | None = None
    #: KIP-853 (v1 LeaderEndpoints): where the leader serves, so a voter whose voter set lists
    #: it elsewhere (it missed the VotersRecord that moved it) still reaches it
    leader_endpoints: tuple[Endpoint, ...] = ()


@dataclass(frozen=True, eq=False)
class BeginQuorumEpochResponse:
    error: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, eq=False)
class EndQuorumEpochRequest:  # api key 54
    cluster_id: str
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class EndQuorumEpochResponse:
    error: int
    leader_id: int
    leader_epoch: int


HIGH_WATERMARK_UNKNOWN = (1 << 63) - 1  # Kafka's default of FetchRequest's HighWatermark tag


@dataclass(frozen=True, eq=False)
class FetchRequest:  # api key 1, version 18 shape
    """``high_watermark`` is the high watermark the replica knows (KIP-1166, Fetch v18's
    partition tag 1): the leader answers at once, instead of parking, a replica that is
    behind on it. Kafka's default, the largest int64, means "never answer early"."""

    cluster_id: str
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    max_wait_ms: int
    max_bytes: int
    high_watermark: int = HIGH_WATERMARK_UNKNOWN
    #: KIP-853 (Fetch v17's partition tag 0): the replica's metadata directory id, None if unknown
    replica_directory_id: bytes | None = None


@dataclass(frozen=True, eq=False)
class FetchResponse:
    """One partition's answer. ``diverging_epoch`` (end offset, epoch) asks the follower to
    truncate; ``snapshot_id`` asks it to fetch that snapshot first."""

    error: int
    leader_id: int
    leader_epoch: int
    high_watermark: int = -1
    log_start_offset: int = -1
    batches: tuple[LogBatch, ...] = ()
    diverging_epoch: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None


@dataclass(frozen=True, eq=False)
class FetchSnapshotRequest:  # api key 59
    cluster_id: str
    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int


@dataclass(frozen=True, eq=False)
class FetchSnapshotResponse:
    error: int
    leader_id: int | None
    leader_epoch: int
    snapshot_id: OffsetAndEpoch | None = None
    size: int = -1
    position: int = -1
    data: bytes = b""
