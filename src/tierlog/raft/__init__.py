"""Sans-IO Raft for the metadata quorum (KIP-595) with snapshots (KIP-630).

No sockets, clocks or randomness of its own: the shell calls RaftNode with
``now_ms`` and an injected ``random.Random``, sends what Output says and answers
parked fetches later. See node.py for the call contract and state.py for the
election state machine.

Where each Raft rule lives (one small unit each; the module docstring states its rules):

    node.py            RaftNode, the coordinator: dispatches messages, learns leaders and
                       epochs from any message, runs the transitions and per-state timers,
                       collects what each Output must persist
    election.py        answering Vote and Begin/EndQuorumEpoch and handling their answers
    state.py           the election states, their legal transitions, and every change to
                       them (votes, backoff, acks, fetch deadline); persisted before effect
    vote.py            when to grant a vote; election and EndQuorumEpoch backoff
    requests.py        one request in flight per peer, retry backoff, request timeouts,
                       an observer's leader discovery
    leader.py          the leader's replica progress, high watermark, check-quorum, when
                       the log begin offset may move
    leader_fetch.py    the leader answering Fetch/FetchSnapshot, appending proposals
    purgatory.py       Fetch requests parked until data or expiry
    proposals.py       the leader's linger queue of proposed records
    fetch.py           validating a follower's Fetch position; where a follower truncates
    follower_fetch.py  the follower's Fetch loop: append, truncate, follow the HW and LBO
    snapshot_fetch.py  the follower's chunked FetchSnapshot download
    retention.py       the log begin offset and snapshot deletion (start-up validation too)
    voters.py          KIP-853 voter sets: (id, directory id, endpoints), their VotersRecord, the
                       history of sets in the log (the latest is in effect)
    voter_log.py       keeps that history in step with appends, truncations, snapshots, restarts
    leader_voters.py   the leader's add / remove voter rules (one change at a time, caught up)
    voter_changes.py   add / remove / update voter at the leader (the VotersRecord written), and
                       DescribeQuorum's view of the quorum
    commits.py         the high watermark, what became committed for the Output, leader-change notices
    committed.py       the items of Output.committed (batches, snapshot loads, leader changes)
    log.py, snapshots.py, quorum_store.py    the storage interfaces (+ memory versions);
                       file_log.py, file_snapshots.py the on-disk ones
    codec.py, wire.py, messages.py           batches on disk, messages on the wire
"""

from tierlog.raft.committed import Committed, CommittedBatch
from tierlog.raft.log import MemoryLog, ReplicatedLog
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
from tierlog.raft.node import Output, RaftNode, RequestOutcome
from tierlog.raft.quorum_store import (
    ElectionState,
    FileQuorumStateStore,
    MemoryQuorumStateStore,
    QuorumStateStore,
)
from tierlog.raft.snapshots import (
    MemorySnapshotStore,
    SnapshotReader,
    SnapshotStore,
    SnapshotWriter,
)
from tierlog.raft.types import (
    Err,
    LeaderAndEpoch,
    LogBatch,
    NotLeaderError,
    OffsetAndEpoch,
    QuorumInfo,
    RaftConfig,
    ReplicaInfo,
)

__all__ = [
    "BeginQuorumEpochRequest", "BeginQuorumEpochResponse", "Committed", "CommittedBatch", "ElectionState",
    "EndQuorumEpochRequest", "EndQuorumEpochResponse", "Err", "FetchRequest", "FetchResponse",
    "FetchSnapshotRequest", "FetchSnapshotResponse", "FileQuorumStateStore", "LeaderAndEpoch", "LogBatch",
    "MemoryLog", "MemoryQuorumStateStore", "MemorySnapshotStore", "NotLeaderError", "OffsetAndEpoch",
    "Output", "QuorumInfo", "QuorumStateStore", "RaftConfig", "RaftNode", "ReplicaInfo",
    "ReplicatedLog", "RequestOutcome", "SnapshotReader", "SnapshotStore", "SnapshotWriter", "VoteRequest",
    "VoteResponse",
]
