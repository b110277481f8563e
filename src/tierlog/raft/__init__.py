"""Sans-IO Raft for the metadata quorum (KIP-595) with snapshots (KIP-630).

No sockets, clocks or randomness of its own: the shell calls RaftNode with
``now_ms`` and an injected ``random.Random``, sends what Output says and answers
parked fetches later. See node.py for the call contract and state.py for the
election state machine.
"""

from tierlog.raft.listener import CommittedBatch, QuorumInfo, RaftListener, ReplicaInfo
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
    RaftConfig,
)

__all__ = [
    "BeginQuorumEpochRequest", "BeginQuorumEpochResponse", "CommittedBatch", "ElectionState",
    "EndQuorumEpochRequest", "EndQuorumEpochResponse", "Err", "FetchRequest", "FetchResponse",
    "FetchSnapshotRequest", "FetchSnapshotResponse", "FileQuorumStateStore", "LeaderAndEpoch", "LogBatch",
    "MemoryLog", "MemoryQuorumStateStore", "MemorySnapshotStore", "NotLeaderError", "OffsetAndEpoch",
    "Output", "QuorumInfo", "QuorumStateStore", "RaftConfig", "RaftListener", "RaftNode", "ReplicaInfo",
    "ReplicatedLog", "RequestOutcome", "SnapshotReader", "SnapshotStore", "SnapshotWriter", "VoteRequest",
    "VoteResponse",
]
