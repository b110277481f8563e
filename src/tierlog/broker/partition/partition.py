"""One partition replica hosted by this broker: the owner of its writes and reads.

Handlers, coordinators and the replica fetcher's shell go through it and never
touch its log (Kafka's ``Partition``):

- ``append_as_leader(records, origin, required_acks, ...)``
  (``Partition.appendRecordsToLeader``): internal topics refuse client appends;
  leadership; acks=all refused with NOT_ENOUGH_REPLICAS before the append while
  the ISR is under min.insync.replicas (or REQUEST_TIMED_OUT when the purgatory
  is full); the log validates the batch, checks the producer state (idempotence:
  a retry is answered with its first offsets, a gap with
  OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch with INVALID_PRODUCER_EPOCH), assigns
  offsets and stamps the leader epoch; an acks=all waiter is parked in the
  partition's purgatory; the leader state learns the new log end offset and
  returns what moved (high watermark, an AlterPartition to send), which the
  replica manager acts on.
- ``append_markers_as_leader`` (origin MARKER, WriteTxnMarkers): transaction markers
  of several producers in one write; the producer state fences each marker of an
  older epoch on its own and ends its producer's transaction (an abort is indexed
  in ``.txnindex``).
- ``append_as_follower`` (origin replication): the leader's batches as they are.
- ``read(offset, max_bytes, isolation)`` (``Partition.fetchRecords``): whole
  batches below ``max_offset(isolation)``, the one place that bounds what a reader
  may see: the log end for replicas, the high watermark for read_uncommitted, the
  last stable offset for read_committed (KIP-98: the first offset of the oldest
  transaction not decided below the high watermark), whose reads also carry the
  aborted transactions they overlap.
- ListOffsets lookups (``fetch_offset_for_timestamp``, ``offsets``), epoch
  lookups, DeleteRecords on the leader, the follower's truncations and high
  watermark.

The metadata image decides the mode (``ReplicaManager``):

- leader: ``leader_state`` (a ``replication.LeaderState``) owns the high
  watermark, the smallest log end offset over the ISR; ``purgatory`` parks
  acks=all appends until the high watermark covers them, ``deletes``
  DeleteRecords until the ISR's log starts reach the new log start;
- follower: the replica fetcher appends the leader's batches and sets
  ``follower_hw`` to min(leader's high watermark, local log end offset).

The high watermark is checkpointed (``replication-offset-checkpoint``, written by
``ReplicaManager``): a replica opened from disk once replication is running
starts with min(checkpointed HW, log end offset), 0 if none (``follower_hw``;
a new leader's ``LeaderState`` starts from it), and a follower's value is
replaced by the leader's on the first fetch.  ``follower_hw`` = -1 (replication
not started) means the log end offset.

The producer state (idempotent producers and KIP-98 transactions) lives in the log's
``storage.producer_state`` and is reached only through this class.
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

from tierlog.metadata.topic_rules import CLIENT_UNWRITABLE_TOPICS
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    AcksPurgatory,
    DeleteRecordsPurgatory,
    FollowerLog,
    LeaderState,
    LocalLog,
)
from tierlog.storage import (
    InvalidRecordError,
    KafkaStorageError,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    ProducerStateError,
    ReadResult,
)
from tierlog.tiered.read_rules import TieredLogState

from .outcomes import AppendOrigin, AppendOutcome, FetchIsolation, PartitionRead

__all__ = ["Partition", "append_origin_error"]

ACKS_ALL = -1


def append_origin_error(topic: str, origin: AppendOrigin) -> tuple[int, str | None]:
    """Kafka's ReplicaManager rule: producers never write ``__consumer_offsets`` or
    ``__transaction_state`` ("Cannot append to internal topic"); its coordinators do."""
    if origin is AppendOrigin.CLIENT and topic in CLIENT_UNWRITABLE_TOPICS:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}"
    return ErrorCode.NONE, None


@dataclass(slots=True)
class Partition:
    topic: str
    index: int
    topic_id: bytes
    log: Log                              # this package's; nothing outside broker.partition touches it
    leader_id: int
    leader_epoch: int
    leader_state: LeaderState | None = None
    purgatory: AcksPurgatory = field(default_factory=AcksPurgatory)
    deletes: DeleteRecordsPurgatory = field(default_factory=DeleteRecordsPurgatory)
    _follower_hw: int = -1                # -1: not set yet, the log end offset is used (``follower_hw``)
    moved_away_epoch: int = -1            # the leader epoch at which this broker stopped leading it
    # each follower's latest Fetch on this broker (any partition): the replica manager's, shared
    replica_fetch_ms: Mapping[int, int] = field(default_factory=dict)
    # keys of the partitions whose high watermark may have moved since the last checkpoint: the
    # replica manager's, shared (a follower's moves are added here, a leader's by the manager)
    hw_moved: set[tuple[str, int]] = field(default_factory=set)

    @property
    def follower_hw(self) -> int:
        return self._follower_hw

    @follower_hw.setter
    def follower_hw(self, value: int) -> None:
        if value != self._follower_hw:
            self._follower_hw = value
            self.hw_moved.add(self.key)

    @property
    def is_leader(self) -> bool:
        """This replica leads the partition (at ``leader_epoch``)."""
        return self.leader_state is not None

    def leads(self, epoch: int) -> bool:
        """The leadership lease: this replica still leads at ``epoch``.  A coordinator that loaded the
        partition at an epoch checks it before it answers or writes: any other leader epoch, a
        follower or a dropped replica has lost the lease (a new epoch is a new lease even when this
        broker leads again)."""
        ls = self.leader_state
        return ls is not None and ls.leader_epoch == epoch

    @property
    def moved_away(self) -> bool:
        """This broker led the partition until its current leader epoch began: its image is not
        behind on who leads now (``broker.apis.stale_metadata``)."""
        return self.leader_state is None and self.moved_away_epoch == self.leader_epoch

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    # -- offsets ---------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def local_log_start_offset(self) -> int:
        return self.log.local_log_start_offset

    @property
    def high_watermark(self) -> int:
        leo = self.log.log_end_offset
        if self.leader_state is not None:
            return min(self.leader_state.high_watermark, leo)
        return leo if self.follower_hw < 0 else min(self.follower_hw, leo)

    @property
    def last_stable_offset(self) -> int:
        """KIP-98: the first offset of the oldest transaction not decided below the high
        watermark (open, or its marker not yet replicated), else the high watermark."""
        hw = self.high_watermark
        unstable = self.log.first_unstable_offset(hw)
        return hw if unstable is None else min(hw, unstable)

    def max_offset(self, isolation: FetchIsolation) -> int:
        """The exclusive bound of what a reader at ``isolation`` may see (Kafka's
        ``LocalLog.fetchOffsetSnapshot`` by FetchIsolation): the only place reads are bounded."""
        if isolation is FetchIsolation.LOG_END:
            return self.log.log_end_offset
        if isolation is FetchIsolation.TXN_COMMITTED:
            return self.last_stable_offset
        return self.high_watermark

    @property
    def offline(self) -> bool:
        """Its log is closed or its log dir failed."""
        return self.log.offline

    @property
    def config(self) -> LogConfig:
        return self.log.config

    def update_config(self, config: LogConfig) -> None:
        """The topic's configs changed (the metadata image)."""
        if self.log.config != config:
            self.log.update_config(config)

    def follower_view(self) -> FollowerLog:
        """The read-only view of this replica the replica fetcher's core reads (its log)."""
        return self.log

    @property
    def tiered(self) -> bool:
        """The topic asks for tiered storage (``remote.storage.enable``)."""
        return self.log.config.remote_storage_enable

    def tiered_state(self, with_epochs: bool = False) -> TieredLogState:
        """What KIP-405's read rules (``tiered.read_rules``) need of this log."""
        log = self.log
        return TieredLogState(log.config.remote_storage_enable, log.log_start_offset, log.local_log_start_offset,
                              log.log_end_offset, log.highest_offset_in_remote_storage.value,
                              tuple(log.epoch_entries()) if with_epochs else ())

    def local_log(self) -> LocalLog:
        """KIP-1303's local-log figures of this replica."""
        return LocalLog(self.log.local_log_start_timestamp, self.log.local_log_size_bytes)

    # -- leader epochs -------------------------------------------------------------------------
    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch in the log's epoch cache, -1 if none."""
        epoch = self.log.latest_epoch
        return -1 if epoch is None else epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) as OffsetForLeaderEpoch answers (KIP-279)."""
        return self.log.end_offset_for_epoch(epoch)

    def epoch_entries(self) -> list[tuple[int, int]]:
        return self.log.epoch_entries()

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int, int] | None:
        """(offset, timestamp, epoch) of the first local record at or after ``timestamp``, else None."""
        return self.log.offset_for_timestamp(timestamp)

    def max_timestamp_offset(self) -> tuple[int, int, int] | None:
        """(offset, timestamp, epoch) of the local record with the largest timestamp (KIP-734)."""
        return self.log.max_timestamp_offset()

    def start_leader_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """Becoming leader at ``leader_epoch``: record where the epoch starts (Kafka's
        maybeAssignEpochStartOffset) and return (high watermark, log end offset) to start from."""
        leo = self.log.log_end_offset
        hw = min(self.high_watermark, leo)
        self.log.assign_epoch_start_offset(leader_epoch, leo)
        return hw, leo

    # -- writes ----------------------------------------------------------------------------------
    def append_as_leader(self, records: bytearray, origin: AppendOrigin, required_acks: int, now_ms: int,
                         waiter: Hashable | None = None, timeout_ms: int = 0) -> AppendOutcome:
        """Kafka's ``Partition.appendRecordsToLeader``; ``waiter`` (acks=all) is parked in the
        purgatory until the high watermark passes the batch or ``timeout_ms`` passes."""
        assert origin in (AppendOrigin.CLIENT, AppendOrigin.COORDINATOR), "markers: append_markers_as_leader"
        refused = self._refuse_leader_write(origin, required_acks)
        if refused is not None:
            return refused
        try:
            result = self.log.append(records, self.leader_epoch, now_ms, origin is AppendOrigin.CLIENT)
        except InvalidRecordError as e:
            return AppendOutcome.refused(e.error_code, str(e), e.record_errors)
        except ProducerStateError as e:
            return AppendOutcome.refused(e.error_code, str(e))
        except KafkaStorageError as e:
            return AppendOutcome.refused(ErrorCode.KAFKA_STORAGE_ERROR, str(e))
        return self._appended(result.base_offset, result.last_offset + 1, result.log_append_time_ms,
                              required_acks, now_ms, waiter, timeout_ms)

    def append_markers_as_leader(self, markers: list[tuple[bytearray, int]], now_ms: int,
                                 waiter: Hashable | None = None, timeout_ms: int = 0) -> tuple[AppendOutcome, list[int]]:
        """Transaction markers ``(control batch, WriteTxnMarkers TransactionVersion)`` of several
        producers in one write (origin MARKER, acks=all; ``Log.append_markers``): the producer
        state fences each marker of an older epoch (KIP-1228: or not newer with transaction.version
        2) or coordinator epoch and ends its producer's transaction (an abort is indexed in
        ``.txnindex``).  The write's outcome (``waiter`` parked past the last marker written) and
        each marker's error code (NONE: written), in order."""
        refused = self._refuse_leader_write(AppendOrigin.MARKER, ACKS_ALL)
        if refused is not None:
            return refused, [refused.error] * len(markers)
        try:
            results = self.log.append_markers(markers, self.leader_epoch, now_ms)
        except KafkaStorageError as e:
            return AppendOutcome.refused(ErrorCode.KAFKA_STORAGE_ERROR, str(e)), \
                [ErrorCode.KAFKA_STORAGE_ERROR] * len(markers)
        codes = [r.error_code if isinstance(r, Exception) else ErrorCode.NONE for r in results]
        written = [r for r in results if not isinstance(r, Exception)]
        if not written:
            return AppendOutcome.refused(codes[0]), codes
        return self._appended(min(r.base_offset for r in written), max(r.last_offset for r in written) + 1,
                              -1, ACKS_ALL, now_ms, waiter, timeout_ms), codes

    def _refuse_leader_write(self, origin: AppendOrigin, required_acks: int) -> AppendOutcome | None:
        """Internal topics refuse client appends; only the leader appends; acks=all needs the ISR at
        min.insync.replicas (and room in the purgatory)."""
        error, message = append_origin_error(self.topic, origin)
        if error:
            return AppendOutcome.refused(error, message)
        ls = self.leader_state
        if ls is None:
            return AppendOutcome.refused(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if required_acks == ACKS_ALL:
            error = self.purgatory.check_before_append(len(ls.isr), ls.effective_min_isr)
            if error:
                return AppendOutcome.refused(error)
        return None

    def _appended(self, base: int, end: int, log_append_time_ms: int, required_acks: int, now_ms: int,
                  waiter: Hashable | None, timeout_ms: int) -> AppendOutcome:
        """Park an acks=all ``waiter`` until the high watermark reaches ``end``; the leader state
        learns the new log end."""
        ls = self.leader_state
        assert ls is not None
        parked = required_acks == ACKS_ALL and waiter is not None and ls.high_watermark < end
        if parked:
            self.purgatory.add(waiter, end, now_ms, timeout_ms)
        update = ls.on_leader_append(self.log.log_end_offset, now_ms, self.replica_fetch_ms)
        return AppendOutcome(ErrorCode.NONE, None, base, end, log_append_time_ms, self.log.log_start_offset,
                             appended=True, parked=parked, update=update)

    def append_as_follower(self, records: bytearray, now_ms: int) -> None:
        """The leader's batches as they are (AppendOrigin.REPLICATION: offsets and epochs already set)."""
        self.log.append_as_follower(records, now_ms)

    def update_follower_high_watermark(self, leader_hw: int, leader_log_start_offset: int) -> None:
        """A fetch answer from the leader: the high watermark (capped by what is here) and the log
        start (raised at most to the high watermark)."""
        if leader_hw >= 0:
            self.follower_hw = min(leader_hw, self.log.log_end_offset)
        if leader_log_start_offset > self.log.log_start_offset:
            self.log.increment_log_start_offset(min(leader_log_start_offset, self.high_watermark))

    def truncate_to(self, offset: int) -> None:
        """Drop everything at and above ``offset`` (a diverging follower, KIP-595 / KIP-320)."""
        self.log.truncate_to(offset)
        self.follower_hw = min(self.follower_hw, self.log.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at ``offset`` (the leader's log start is past ours)."""
        self.log.truncate_fully_and_start_at(offset)
        self.follower_hw = offset

    def delete_records_on_leader(self, offset: int) -> tuple[int, int, bool]:
        """Kafka's ``Partition.deleteRecordsOnLeader``: (error, the new log start asked for, whether
        the log start moved).  NOT_LEADER_OR_FOLLOWER off the leader, POLICY_VIOLATION without
        cleanup.policy=delete, OFFSET_OUT_OF_RANGE outside [0, high watermark] (-1 means the high
        watermark), REQUEST_TIMED_OUT when ``deletes`` is full (ours: a bound Kafka lacks)."""
        if self.leader_state is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, False
        if "delete" not in self.log.config.cleanup_policy:
            return ErrorCode.POLICY_VIOLATION, -1, False
        hw = self.high_watermark
        target = hw if offset == -1 else offset
        if not 0 <= target <= hw:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1, False
        if self.deletes.full:
            return ErrorCode.REQUEST_TIMED_OUT, -1, False
        return ErrorCode.NONE, target, self.log.increment_log_start_offset(target)

    # -- reads -------------------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, isolation: FetchIsolation,
             min_one_batch: bool = True) -> PartitionRead:
        """Kafka's ``Partition.fetchRecords`` / ``readRecords``: whole batches from the one holding
        ``fetch_offset`` below ``max_offset(isolation)``; OFFSET_OUT_OF_RANGE outside the local
        log, KAFKA_STORAGE_ERROR when the disk fails."""
        upper = self.max_offset(isolation)
        try:
            result: ReadResult = self.log.read(fetch_offset, max_bytes, upper_bound=upper,
                                               min_one_batch=min_one_batch)
        except OffsetOutOfRangeError:
            return PartitionRead(ErrorCode.OFFSET_OUT_OF_RANGE)
        except KafkaStorageError:
            return PartitionRead(ErrorCode.KAFKA_STORAGE_ERROR)
        more = not result.size and fetch_offset < min(upper, self.log.log_end_offset)
        aborted = self.log.aborted_transactions(fetch_offset, upper) \
            if isolation is FetchIsolation.TXN_COMMITTED and result.size else ()
        return PartitionRead(ErrorCode.NONE, result.parts, result.size, more, aborted)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list:
        """The local log's aborted transactions overlapping [fetch_offset, upper_bound) (a remote
        read_committed read whose remote indexes did not complete the search)."""
        return self.log.aborted_transactions(fetch_offset, upper_bound)

    def open_transaction_epoch(self, producer_id: int) -> int | None:
        """The epoch of the producer's open transaction here, None without one (KIP-890 part 1)."""
        return self.log.open_transaction_epoch(producer_id)

    def active_producers(self) -> list:
        """Its producers: id, epoch, last sequence and timestamp, coordinator epoch, open
        transaction's first offset (DescribeProducers)."""
        return self.log.active_producers()

    def check_epoch(self, current_leader_epoch: int) -> int:
        """Kafka's fencing of a request's CurrentLeaderEpoch: NONE, FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH."""
        if current_leader_epoch == -1 or current_leader_epoch == self.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH
