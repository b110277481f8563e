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

The metadata image decides the mode; the replica manager calls the transition
and applies what it returns (a ``PartitionUpdate``: waiters to answer, an
AlterPartition to send):

- ``become_leader`` (Kafka's ``makeLeader``) at a new leader epoch: the epoch's
  start is recorded in the epoch cache and a ``replication.LeaderState`` owns the
  follower states, the ISR and the high watermark (the smallest log end offset
  over the ISR); ``update_leader`` within the epoch (ISR, fencing, recovery);
  ``leads(epoch)`` is the lease coordinators check.  The acks=all purgatory parks
  appends until the high watermark covers them, the DeleteRecords one until the
  ISR's log starts reach the new log start; both complete inside this class
  (``on_follower_fetch``, appends, ``tick``, AlterPartition answers) and hand the
  completions back.
- ``become_follower`` (``makeFollower``): the parked requests fail with
  NOT_LEADER_OR_FOLLOWER; the replica fetcher appends the leader's batches and
  sets ``follower_hw`` to min(leader's high watermark, local log end offset).

The high watermark is checkpointed (``replication-offset-checkpoint``, written by
``ReplicaManager``): a replica opened from disk once replication is running
starts with min(checkpointed HW, log end offset), 0 if none (``follower_hw``;
a new leader's ``LeaderState`` starts from it), and a follower's value is
replaced by the leader's on the first fetch.  ``follower_hw`` = -1 (replication
not started) means the log end offset.

The producer state (idempotent producers and KIP-98 transactions) lives in the log's
``storage.producer_state`` and is reached only through this class.

A log dir move (AlterReplicaLogDirs): ``start_future`` takes the empty future log
the log manager opened in the target dir, ``copy_to_future`` fills it a step at a
time (``future_log``), truncations apply to both logs, and ``swap_future`` (only
once caught up, in the same event-loop step) completes it and makes it current.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from tierlog.metadata import PartitionInfo
from tierlog.metadata.image import LEADER_RECOVERING
from tierlog.metadata.topic_rules import CLIENT_UNWRITABLE_TOPICS
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    AcksPurgatory,
    AlterPartitionItem,
    Completion,
    DeleteCompletion,
    DeleteRecordsPurgatory,
    FollowerLog,
    LeaderConfig,
    LeaderState,
    LeaderUpdate,
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
    RolledSegment,
)
from tierlog.tiered.read_rules import TieredLogState

from . import future_log
from .outcomes import AppendOrigin, AppendOutcome, FetchIsolation, PartitionRead, PartitionUpdate

__all__ = ["Partition", "append_origin_error"]

log = logging.getLogger(__name__)

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
    leader_id: int                        # as of the latest transition (read-only outside this class)
    leader_epoch: int
    # each follower's latest Fetch on this broker (any partition): the replica manager's, shared
    replica_fetch_ms: Mapping[int, int] = field(default_factory=dict)
    # keys of the partitions whose high watermark may have moved since the last checkpoint: the
    # replica manager's, shared (this class adds its own key whenever its high watermark moves)
    hw_moved: set[tuple[str, int]] = field(default_factory=set)
    _leader: LeaderState | None = field(default=None, init=False)
    _acks: AcksPurgatory = field(default_factory=AcksPurgatory, init=False)
    _deletes: DeleteRecordsPurgatory = field(default_factory=DeleteRecordsPurgatory, init=False)
    _follower_hw: int = field(default=-1, init=False)      # -1: not set yet, the log end offset is used
    _moved_away_epoch: int = field(default=-1, init=False)  # the leader epoch at which it stopped leading
    _future: Log | None = field(default=None, init=False)    # AlterReplicaLogDirs: the log being filled

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
        return self._leader is not None

    def leads(self, epoch: int) -> bool:
        """The leadership lease: this replica still leads at ``epoch``.  A coordinator that loaded the
        partition at an epoch checks it before it answers or writes: any other leader epoch, a
        follower or a dropped replica has lost the lease (a new epoch is a new lease even when this
        broker leads again)."""
        ls = self._leader
        return ls is not None and ls.leader_epoch == epoch

    @property
    def moved_away(self) -> bool:
        """This broker led the partition until its current leader epoch began: its image is not
        behind on who leads now (``broker.apis.stale_metadata``)."""
        return self._leader is None and self._moved_away_epoch == self.leader_epoch

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    # -- leadership --------------------------------------------------------------------------
    def become_leader(self, p: PartitionInfo, config: LeaderConfig, leader_broker_epoch: int,
                      fenced: frozenset[int], now_ms: int) -> PartitionUpdate:
        """Kafka's ``Partition.makeLeader`` at ``p.leader_epoch``: the previous epoch's parked requests
        fail, the epoch's start is recorded (``maybeAssignEpochStartOffset``) and a new leader state
        starts from the high watermark known here."""
        acks, deletes = self._fail_waiting()
        self.leader_id, self.leader_epoch = p.leader, p.leader_epoch
        leo = self.log.log_end_offset
        hw = min(self.high_watermark, leo)
        self.log.assign_epoch_start_offset(p.leader_epoch, leo)
        self._leader = ls = LeaderState(
            topic_id=self.topic_id, partition=self.index, leader_id=p.leader, leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch, replicas=tuple(p.replicas), isr=tuple(p.isr), high_watermark=hw,
            log_end_offset=leo, now_ms=now_ms, config=config, leader_broker_epoch=leader_broker_epoch,
            fenced=fenced, recovering=p.leader_recovery_state == LEADER_RECOVERING,
            # KIP-1303: what the controller already holds needs no new report
            committed_local_logs={b: LocalLog(c.local_log_start_timestamp, c.local_log_size_bytes)
                                  for b, c in p.coverage().items()})
        log.info("%s-%d: leader at epoch %d (isr %s, hw %d, leo %d)", self.topic, self.index, p.leader_epoch,
                 list(p.isr), hw, leo)
        self.hw_moved.add(self.key)            # the leader state's high watermark from now on
        return self._settle(ls.on_leader_append(leo, now_ms, self.replica_fetch_ms), list(acks), list(deletes))

    def update_leader(self, p: PartitionInfo, eligible_local_log_bytes: int, fenced: frozenset[int],
                      now_ms: int) -> PartitionUpdate:
        """The image changed the partition within the leader epoch it leads at (ISR, replicas, fencing,
        recovery; KIP-1303: a dynamic change of the bytes threshold applies to the next report)."""
        ls = self._leader
        assert ls is not None and ls.leader_epoch == p.leader_epoch, "a new leader epoch: become_leader"
        ls.config = replace(ls.config, eligible_local_log_bytes=eligible_local_log_bytes)
        return self._settle(ls.on_partition_metadata(
            leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch, isr=tuple(p.isr),
            replicas=tuple(p.replicas), now_ms=now_ms, leader_leo=self.log.log_end_offset, fenced=fenced,
            recovering=p.leader_recovery_state == LEADER_RECOVERING))

    def become_follower(self, leader_id: int, leader_epoch: int) -> PartitionUpdate | None:
        """Kafka's ``Partition.makeFollower`` (``leader_id`` -1: no leader): None when it was not
        leading, else the parked requests to fail (it keeps the high watermark it had)."""
        self.leader_id, self.leader_epoch = leader_id, leader_epoch
        if self._leader is None:
            return None
        self.follower_hw = self.high_watermark
        self._leader = None
        self._moved_away_epoch = leader_epoch
        return PartitionUpdate(*self._fail_waiting())

    def stop(self) -> PartitionUpdate:
        """No longer hosted here (deleted, reassigned away, its log dir failed): nothing waits."""
        self._leader = None
        return PartitionUpdate(*self._fail_waiting())

    def _fail_waiting(self) -> tuple[list[Completion], list[DeleteCompletion]]:
        """Leadership lost: parked produces and DeleteRecords answer NOT_LEADER_OR_FOLLOWER."""
        return self._acks.fail_all(), self._deletes.fail_all()

    def _settle(self, upd: LeaderUpdate, acks: list[Completion] | None = None,
                deletes: list[DeleteCompletion] | None = None) -> PartitionUpdate:
        """What the leader state's ``upd`` completes (Kafka's ``tryCompleteDelayedRequests``): acks=all
        waiters the high watermark passed (or whose ISR fell under min.insync.replicas), DeleteRecords
        whose low watermark is reached; added to ``acks`` / ``deletes`` already done."""
        ls = self._leader
        assert ls is not None
        done = self._acks.on_high_watermark(ls.high_watermark, len(ls.isr), ls.effective_min_isr)
        if done:
            acks = acks + done if acks else done
        if self._deletes:
            reached = self._deletes.on_low_watermark(ls.low_watermark(self.log.log_start_offset))
            deletes = deletes + reached if deletes else reached
        if upd.hw_advanced:
            self.hw_moved.add(self.key)
        return PartitionUpdate(acks or (), deletes or (), upd.hw_advanced, upd.alter_partition, upd.error)

    def on_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int, broker_epoch: int = -1,
                          log_start_offset: int = -1, local_log_start_timestamp: int = -1,
                          local_log_size_bytes: int = -1) -> PartitionUpdate | None:
        """Kafka's ``Partition.updateFollowerFetchState``: a follower fetched at ``fetch_offset`` (no
        DivergingEpoch); None off the leader or past the log end (nothing learnt)."""
        ls = self._leader
        leo = self.log.log_end_offset
        if ls is None or fetch_offset > leo:
            return None
        return self._settle(ls.on_follower_fetch(
            replica_id, fetch_offset, now_ms=now_ms, leader_leo=leo, log_start_offset=log_start_offset,
            broker_epoch=broker_epoch, local_log_start_timestamp=local_log_start_timestamp,
            local_log_size_bytes=local_log_size_bytes))

    def on_alter_partition_response(self, item: AlterPartitionItem, error: int, leader_epoch: int,
                                    partition_epoch: int, isr: tuple[int, ...], now_ms: int) -> PartitionUpdate | None:
        """The controller answered ``item`` (None: this replica no longer leads at its epoch)."""
        if not self.leads(item.leader_epoch):
            return None
        assert self._leader is not None
        return self._settle(self._leader.on_alter_partition_response(
            error, now_ms=now_ms, leader_leo=self.log.log_end_offset, leader_epoch=leader_epoch,
            partition_epoch=partition_epoch, isr=isr))

    def on_alter_partition_failure(self, item: AlterPartitionItem, now_ms: int) -> None:
        """``item`` got no answer: retried after a backoff while this replica leads at its epoch."""
        if self._leader is not None and self.leads(item.leader_epoch):
            self._leader.on_alter_partition_failure(now_ms)

    def tick(self, now_ms: int) -> PartitionUpdate:
        """The leader's periodic work: expired waiters, ISR shrinks, AlterPartition retries, KIP-1303
        reports."""
        ls = self._leader
        assert ls is not None, "only a leader ticks"
        expired = self._acks.expire(now_ms)
        deletes = self._deletes.expire(now_ms, ls.low_watermark(self.log.log_start_offset)) if self._deletes else None
        return self._settle(ls.tick(now_ms, self.log.log_end_offset, self.local_log()), expired, deletes)

    @property
    def quiet(self) -> bool:
        """A leader whose tick could change nothing: no parked request, a settled ISR that has the
        whole log."""
        ls = self._leader
        assert ls is not None, "only a leader ticks"
        return not self._acks and not self._deletes and ls.settled(self.log.log_end_offset)

    @property
    def isr_complete(self) -> bool:
        """Every assigned replica is in the ISR (a leader; a follower outside it may join on its
        next fetch otherwise)."""
        ls = self._leader
        return ls is not None and len(ls.isr) == len(ls.replicas)

    def isr_sizes(self) -> tuple[int, int, int] | None:
        """(ISR size, replicas, effective min.insync.replicas) on the leader, else None."""
        ls = self._leader
        return None if ls is None else (len(ls.isr), len(ls.replicas), ls.effective_min_isr)

    @property
    def leader_behind_epoch_start(self) -> bool:
        """A new leader whose high watermark has not reached the start of its epoch yet (its
        latest offsets are not known committed: OFFSET_NOT_AVAILABLE)."""
        ls = self._leader
        return ls is not None and ls.epoch_start_offset > self.high_watermark

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
        if self._leader is not None:
            return min(self._leader.high_watermark, leo)
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
        """The read-only view of this replica the replica fetcher's core reads (whichever log is
        current: a log dir move swaps it)."""
        return future_log.CurrentLogView(self)

    # -- log dir moves (AlterReplicaLogDirs) -------------------------------------------------------
    @property
    def future(self) -> Log | None:
        """The future log being filled (a move to another log dir under way), else None."""
        return self._future

    def start_future(self, future: Log) -> None:
        self._future = future

    def drop_future(self) -> None:
        """The move was cancelled or its dir failed (the log manager deletes or closes the log)."""
        self._future = None

    def copy_to_future(self, max_bytes: int, now_ms: int) -> bool:
        """One step of filling the future log; True once it holds everything the current one does."""
        assert self._future is not None, "no move under way"
        return future_log.copy_step(self.log, self._future, max_bytes, now_ms)

    def swap_future(self, install: Callable[[], Log]) -> None:
        """Make the caught-up future log current: it is completed (log start, epochs), ``install``
        (the log manager's ``replace_current_with_future``) moves the directories and returns it."""
        future = self._future
        assert future is not None and future.log_end_offset == self.log.log_end_offset, "not caught up"
        future_log.complete(self.log, future)
        self.log = install()
        self._future = None

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

    @property
    def size_in_bytes(self) -> int:
        return self.log.size_in_bytes

    @property
    def segment_count(self) -> int:
        return self.log.segment_count

    def local_log(self) -> LocalLog:
        """KIP-1303's local-log figures of this replica."""
        return LocalLog(self.log.local_log_start_timestamp, self.log.local_log_size_bytes)

    # -- tiered storage (KIP-405; the broker.remote tasks) -----------------------------------------
    @property
    def highest_offset_in_remote_storage(self) -> int:
        """The last offset known uploaded (-1: none): the local retention and the copy passes read it."""
        return self.log.highest_offset_in_remote_storage.value

    def resume_uploads_after(self, offset: int) -> None:
        """Where uploads resume: a new leader's lineage, or what a follower reads in the remote log
        metadata (it may go down)."""
        self.log.highest_offset_in_remote_storage.set(offset)

    def segment_uploaded(self, end_offset: int) -> None:
        """A segment up to ``end_offset`` finished uploading (only ever up)."""
        self.log.highest_offset_in_remote_storage.update(end_offset)

    def rolled_segments(self) -> list[RolledSegment]:
        """Every segment but the active one, oldest first, as an upload sees it."""
        return self.log.rolled_segments()

    def producer_snapshot_file(self, offset: int) -> Path | None:
        return self.log.producer_snapshot_file(offset)

    def transaction_index_file(self, segment_base: int) -> Path | None:
        return self.log.transaction_index_file(segment_base)

    def increment_log_start_offset(self, offset: int) -> bool:
        """Remote retention raised the log start (at most the high watermark); whether it moved."""
        return self.log.increment_log_start_offset(min(offset, self.high_watermark))

    def rebuild_from_remote(self, log_start_offset: int, local_log_start_offset: int,
                            epoch_entries: list[tuple[int, int]], producer_snapshot: bytes | None) -> None:
        """KIP-405's follower path (``buildRemoteLogAuxState``): an empty log at
        ``local_log_start_offset`` with the remote segment's epochs and producer state; the high
        watermark starts there."""
        self.log.rebuild_from_remote(log_start_offset, local_log_start_offset, epoch_entries, producer_snapshot)
        self.follower_hw = local_log_start_offset

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

    # -- writes ----------------------------------------------------------------------------------
    def append_as_leader(self, records: bytearray, origin: AppendOrigin, required_acks: int, now_ms: int,
                         waiter: Hashable | None = None, timeout_ms: int = 0) -> AppendOutcome:
        """Kafka's ``Partition.appendRecordsToLeader``; ``waiter`` (acks=all) is parked in the
        purgatory until the high watermark passes the batch or ``timeout_ms`` passes."""
        assert origin in (AppendOrigin.CLIENT, AppendOrigin.COORDINATOR), "markers: append_markers_as_leader"
        if (self._leader is None or not records or required_acks == ACKS_ALL
                or (origin is AppendOrigin.CLIENT and self.topic in CLIENT_UNWRITABLE_TOPICS)):
            refused = self._refuse_leader_write(origin, required_acks, not records)     # each check in its order
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

    def _refuse_leader_write(self, origin: AppendOrigin, required_acks: int,
                             empty: bool = False) -> AppendOutcome | None:
        """The one place a write's partition-level checks happen, in Kafka's order: internal topics
        refuse client appends; only the leader appends; a write needs records; acks=all needs the
        ISR at min.insync.replicas (and room in the purgatory)."""
        error, message = append_origin_error(self.topic, origin)
        if error:
            return AppendOutcome.refused(error, message)
        ls = self._leader
        if ls is None:
            return AppendOutcome.refused(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if empty:
            return AppendOutcome.refused(ErrorCode.INVALID_RECORD, "the produce request has no records")
        if required_acks == ACKS_ALL:
            error = self._acks.check_before_append(len(ls.isr), ls.effective_min_isr)
            if error:
                return AppendOutcome.refused(error)
        return None

    def _appended(self, base: int, end: int, log_append_time_ms: int, required_acks: int, now_ms: int,
                  waiter: Hashable | None, timeout_ms: int) -> AppendOutcome:
        """Park an acks=all ``waiter`` until the high watermark reaches ``end``; the leader state learns
        the new log end; the update's ``tick``: whether a tick could change anything (``needs_tick``)."""
        ls = self._leader
        assert ls is not None
        parked = required_acks == ACKS_ALL and waiter is not None and ls.high_watermark < end
        if parked:
            self._acks.add(waiter, end, now_ms, timeout_ms)
        leo = self.log.log_end_offset
        upd = ls.on_leader_append(leo, now_ms, self.replica_fetch_ms)
        if self._acks or self._deletes:
            update = self._settle(upd)
        else:                   # nothing waits (most appends): what moved, and whether a tick may matter
            if upd.hw_advanced:
                self.hw_moved.add((self.topic, self.index))
            update = PartitionUpdate((), (), upd.hw_advanced, upd.alter_partition, upd.error,
                                     ls.needs_tick(leo, now_ms))
        return AppendOutcome(ErrorCode.NONE, None, base, end, log_append_time_ms, self.log.log_start_offset,
                             True, parked, update)

    def append_as_follower(self, records: bytes | bytearray | memoryview, now_ms: int) -> None:
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
        if self._future is not None:
            self._future.truncate_to(offset)
        self.follower_hw = min(self.follower_hw, self.log.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at ``offset`` (the leader's log start is past ours)."""
        self.log.truncate_fully_and_start_at(offset)
        if self._future is not None:
            self._future.truncate_fully_and_start_at(offset)
        self.follower_hw = offset

    def delete_records_on_leader(self, offset: int) -> tuple[int, int, bool, int]:
        """Kafka's ``Partition.deleteRecordsOnLeader``: (error, the new log start asked for, whether
        the log start moved, the low watermark now).  NOT_LEADER_OR_FOLLOWER off the leader,
        POLICY_VIOLATION without cleanup.policy=delete, OFFSET_OUT_OF_RANGE outside [0, high
        watermark] (-1 means the high watermark), REQUEST_TIMED_OUT when the DeleteRecords purgatory
        is full (ours: a bound Kafka lacks)."""
        ls = self._leader
        if ls is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, False, -1
        if "delete" not in self.log.config.cleanup_policy:
            return ErrorCode.POLICY_VIOLATION, -1, False, -1
        hw = self.high_watermark
        target = hw if offset == -1 else offset
        if not 0 <= target <= hw:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1, False, -1
        if self._deletes.full:
            return ErrorCode.REQUEST_TIMED_OUT, -1, False, -1
        moved = self.log.increment_log_start_offset(target)
        return ErrorCode.NONE, target, moved, ls.low_watermark(self.log.log_start_offset)

    def park_delete(self, waiter: Hashable, target: int, now_ms: int, timeout_ms: int) -> None:
        """A DeleteRecords answered once the ISR's log starts reach ``target`` (or at the timeout)."""
        self._deletes.add(waiter, target, now_ms, timeout_ms)

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
