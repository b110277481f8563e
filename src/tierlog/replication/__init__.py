"""Sans-IO replication cores: leader state (ISR, high watermark, AlterPartition), acks=all
purgatory, follower fetch state and replica fetchers.  No sockets, no clock: the broker
shell and the simulator drive them (DESIGN principles 1-3)."""
from .acks import MAX_PENDING_PRODUCES, AcksPurgatory, Completion
from .alter_partition import ALTER_PARTITION_VERSION, AlterPartitionItem, IsrMember, build_alter_partition_request
from .backoff import ExponentialBackoff
from .divergence import DivergenceCheck, check_follower_fetch, truncation_offset
from .fetch_actions import (Append, AwaitMetadata, Backoff, FetchAction, PartitionKey, ResolveOutOfRange,
                            TruncateFullyAndStartAt, TruncateTo, UpdateHighWatermark)
from .fetcher import FETCH_VERSION, FetcherConfig, FetcherState
from .fetcher_manager import ReplicaFetchers
from .follower import FETCH_BACKOFF_MAX_MS, FetchStatus, FollowerLog, PartitionFetchState
from .isr_state import IsrState, Proposal, ProposalKind
from .leader_state import LeaderConfig, LeaderState, LeaderUpdate
from .local_log_report import (LOCAL_LOG_REPORT_INTERVAL_MS, LOCAL_LOG_SIZE_CHANGE_FRACTION, LocalLog,
                               changed_materially)
from .replica_state import ReplicaState

__all__ = [
    "MAX_PENDING_PRODUCES", "AcksPurgatory", "Completion",
    "ALTER_PARTITION_VERSION", "AlterPartitionItem", "IsrMember", "build_alter_partition_request",
    "ExponentialBackoff",
    "DivergenceCheck", "check_follower_fetch", "truncation_offset",
    "Append", "AwaitMetadata", "Backoff", "FetchAction", "PartitionKey", "ResolveOutOfRange",
    "TruncateFullyAndStartAt", "TruncateTo", "UpdateHighWatermark",
    "FETCH_VERSION", "FetcherConfig", "FetcherState", "ReplicaFetchers",
    "FETCH_BACKOFF_MAX_MS", "FetchStatus", "FollowerLog", "PartitionFetchState",
    "IsrState", "Proposal", "ProposalKind",
    "LeaderConfig", "LeaderState", "LeaderUpdate",
    "LOCAL_LOG_REPORT_INTERVAL_MS", "LOCAL_LOG_SIZE_CHANGE_FRACTION", "LocalLog", "changed_materially",
    "ReplicaState",
]
