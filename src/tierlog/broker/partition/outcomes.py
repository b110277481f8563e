"""What a partition's append and read take and give back (Kafka's AppendOrigin, FetchIsolation,
LogAppendInfo / LogReadInfo, reduced to what tierlog answers with)."""
from __future__ import annotations

import enum
from typing import NamedTuple

from tierlog.protocol.errors import ErrorCode
from tierlog.replication import AlterPartitionItem, Completion, DeleteCompletion
from tierlog.storage import FileRegion

__all__ = ["NO_UPDATE", "AppendOrigin", "AppendOutcome", "FetchIsolation", "PartitionRead", "PartitionUpdate"]

READ_COMMITTED = 1          # the wire's IsolationLevel (Fetch, ListOffsets)


class AppendOrigin(enum.Enum):
    """Who appends (Kafka's ``AppendOrigin``): a producer through Produce, a coordinator of this
    broker (its own records, also to internal topics), a transaction coordinator's marker
    (WriteTxnMarkers: a control batch), or the replica fetcher (batches the leader already stamped)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    MARKER = "marker"
    REPLICATION = "replication"


class FetchIsolation(enum.Enum):
    """How far a read may go (Kafka's ``FetchIsolation``): a replica to the log end, a
    read_uncommitted consumer to the high watermark, a read_committed one to the last stable offset."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"

    @classmethod
    def of(cls, replica_id: int, isolation_level: int) -> FetchIsolation:
        """Kafka's ``FetchIsolation.apply(replicaId, isolationLevel)``: any replica (id >= 0) reads
        to the log end, whatever IsolationLevel it sends."""
        if replica_id >= 0:
            return cls.LOG_END
        return cls.TXN_COMMITTED if isolation_level == READ_COMMITTED else cls.HIGH_WATERMARK


class PartitionUpdate(NamedTuple):
    """What one call on a partition changed, for the replica manager to apply (Kafka's delayed
    operations completed by ``Partition``): the acks=all and DeleteRecords waiters to answer, whether
    the high watermark moved (parked fetches to wake; the partition already marked it for the
    checkpoint), an AlterPartition to send; ``error``: a follower fetch's (NOT_LEADER_OR_FOLLOWER
    for a replica outside the assignment); ``tick``: the leaders' next tick visits the partition
    (false only when it could change nothing there: ``LeaderState.needs_tick``)."""

    acks: tuple[Completion, ...] | list[Completion] = ()
    deletes: tuple[DeleteCompletion, ...] | list[DeleteCompletion] = ()
    hw_advanced: bool = False
    alter_partition: AlterPartitionItem | None = None
    error: int = ErrorCode.NONE
    tick: bool = True


NO_UPDATE = PartitionUpdate()


class AppendOutcome(NamedTuple):
    """One append as the leader: an error (nothing appended unless ``appended``) or the offsets
    given.  ``update``: what the append changed (``PartitionUpdate``: waiters to answer, an
    AlterPartition to send), for the replica manager to apply; ``parked``: the caller's waiter was
    parked until the high watermark passes ``end_offset`` (acks=all)."""

    error: int = ErrorCode.NONE
    message: str | None = None
    base_offset: int = -1
    end_offset: int = -1                  # exclusive: last offset + 1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    appended: bool = False
    parked: bool = False
    update: PartitionUpdate = NO_UPDATE
    record_errors: tuple[tuple[int, str], ...] = ()     # (batch index, message): KIP-467 RecordErrors

    @classmethod
    def refused(cls, error: int, message: str | None = None,
                record_errors: tuple[tuple[int, str], ...] = ()) -> AppendOutcome:
        return cls(error=error, message=message, record_errors=record_errors)


class PartitionRead(NamedTuple):
    """Whole batches as file regions; ``more``: nothing came back although the bound is above the
    fetch offset (the fetch is not done waiting); an error reads nothing.  ``aborted``: a
    read_committed read's aborted transactions overlapping it (the log's ``AbortedTxn``s)."""

    error: int = ErrorCode.NONE
    parts: tuple[FileRegion, ...] | list[FileRegion] = ()
    size: int = 0
    more: bool = False
    aborted: tuple | list = ()
