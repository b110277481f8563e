"""Sans-IO replication cores: leader state (ISR, high watermark, AlterPartition), acks=all
purgatory, follower fetch state and replica fetchers.  No sockets, no clock: the broker
shell and the simulator drive them (DESIGN principles 1-3)."""
from .acks import MAX_PENDING_PRODUCES, AcksPurgatory, Completion
from .alter_partition import (
    ALTER_PARTITION_VERSION,
    AlterPartitionItem,
    IsrMember,
    build_alter_partition_request,
)
from .backoff import ExponentialBackoff
from .delete_records import (
    MAX_PENDING_DELETES,
    DeleteCompletion,
    DeleteRecordsPurgatory,
    low_watermark,
)
from .divergence import DivergenceCheck, check_follower_fetch, truncation_offset
from .fetch_actions import (
    EARLIEST,
    LATEST,
    Append,
    AwaitMetadata,
    Backoff,
    BuildRemoteLogAuxState,
    FetchAction,
    ListLeaderOffset,
    PartitionKey,
    ProbeTieredStart,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateHighWatermark,
)
from .fetcher import FETCH_VERSION, FetcherConfig, FetcherState
from .fetcher_manager import ReplicaFetchers
from .follower import (
    FETCH_BACKOFF_MAX_MS,
    FetchStatus,
    FollowerLog,
    FollowerLogReads,
    PartitionFetchState,
)
from .isr_state import IsrState, Proposal, ProposalKind
from .leader_state import LeaderConfig, LeaderState, LeaderUpdate
from .local_log_report import (
    LOCAL_LOG_REPORT_INTERVAL_MS,
    LOCAL_LOG_SIZE_CHANGE_FRACTION,
    LocalLog,
    changed_materially,
)
from .replica_state import ReplicaState
from .tiered_start import LeaderOffsets, StartKind, TieredStart, TopicTiering

__all__ = [
    "ALTER_PARTITION_VERSION",
    "EARLIEST",
    "FETCH_BACKOFF_MAX_MS",
    "FETCH_VERSION",
    "LATEST",
    "LOCAL_LOG_REPORT_INTERVAL_MS",
    "LOCAL_LOG_SIZE_CHANGE_FRACTION",
    "MAX_PENDING_DELETES",
    "MAX_PENDING_PRODUCES",
    "AcksPurgatory",
    "AlterPartitionItem",
    "Append",
    "AwaitMetadata",
    "Backoff",
    "BuildRemoteLogAuxState",
    "Completion",
    "DeleteCompletion",
    "DeleteRecordsPurgatory",
    "DivergenceCheck",
    "ExponentialBackoff",
    "FetchAction",
    "FetchStatus",
    "FetcherConfig",
    "FetcherState",
    "FollowerLog",
    "FollowerLogReads",
    "IsrMember",
    "IsrState",
    "LeaderConfig",
    "LeaderOffsets",
    "LeaderState",
    "LeaderUpdate",
    "ListLeaderOffset",
    "LocalLog",
    "PartitionFetchState",
    "PartitionKey",
    "ProbeTieredStart",
    "Proposal",
    "ProposalKind",
    "ReplicaFetchers",
    "ReplicaState",
    "StartKind",
    "TieredStart",
    "TopicTiering",
    "TruncateFullyAndStartAt",
    "TruncateTo",
    "UpdateHighWatermark",
    "build_alter_partition_request",
    "changed_materially",
    "check_follower_fetch",
    "low_watermark",
    "truncation_offset",
]
