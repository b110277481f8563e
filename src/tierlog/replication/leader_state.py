"""The leader side of one partition: follower states, ISR changes and the high watermark.

A ``LeaderState`` lives for one leader epoch of one partition on its leader.
The shell builds it on becoming leader (high watermark = the value the log
had, epoch start offset = the log end offset then; the shell also records
(leader epoch, log end offset) in the leader-epoch cache, Kafka's
maybeAssignEpochStartOffset, so DivergingEpoch answers know the new epoch) and
drops it on losing leadership or on a new leader epoch (then builds a fresh
one: unlike Kafka, which keeps follower offsets when the same broker stays
leader, every follower's LEO is unknown again until its next fetch, so the
high watermark waits one fetch round; conservative, never unsafe).

Rules (Kafka's ``Partition``; KIP-1303 draft "Tracking Local Log State"):

- High watermark = the smallest log end offset over the *maximal ISR* (see
  ``isr_state``) and over caught-up, eligible followers outside it (Kafka's
  "wait for a replica about to join"), capped by the leader's LEO.  It never
  decreases, and it does not move while the committed ISR is smaller than the
  effective min.insync.replicas (min(min.insync.replicas, replicas); KIP-966:
  what is committed must be on min ISR replicas).
- Shrink: an ISR follower that is not caught up (``ReplicaState.is_caught_up``)
  for replica.lag.time.max.ms is proposed out (checked by ``tick``).
- Expand: a follower outside the ISR, in the assignment, not fenced, whose LEO
  has reached both the high watermark and the leader-epoch start offset is
  proposed in (checked on its fetch).  The start offset condition keeps a
  follower that only has the previous leader's records out.
- Report (KIP-1303): when an ISR member's LocalLogStartTimestamp /
  LocalLogSizeBytes changed materially (``local_log_report``) a report-only
  AlterPartition with the unchanged ISR is proposed, rate limited.
- At most one proposal at a time; a new one waits until the previous one is
  answered or a metadata update supersedes it.

Entry points, each returning what to send:

- ``on_follower_fetch`` after a valid follower fetch (no DivergingEpoch);
- ``on_leader_append`` after appending a produce batch;
- ``tick`` periodically (shrink checks, retries, reports); ``settled`` says
  whether a tick could change anything;
- ``on_alter_partition_response`` / ``on_alter_partition_failure``;
- ``on_partition_metadata`` when the metadata image changes this partition
  within the same leader epoch.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from tierlog.protocol.errors import ErrorCode

from .alter_partition import AlterPartitionItem, IsrMember
from .backoff import ExponentialBackoff
from .delete_records import low_watermark
from .isr_state import IsrState, ProposalKind
from .local_log_report import (
    LOCAL_LOG_REPORT_INTERVAL_MS,
    UNKNOWN_LOCAL_LOG,
    LocalLog,
    changed_materially,
)
from .replica_state import UNKNOWN, ReplicaState

__all__ = ["LeaderConfig", "LeaderState", "LeaderUpdate"]

# errors after which the proposal is certainly not applied: drop it
_REJECTED = frozenset({ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED})
# errors saying our view is stale: wait for the metadata update
_STALE = frozenset({ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
                    ErrorCode.NEW_LEADER_ELECTED, ErrorCode.INVALID_REQUEST})


@dataclass(frozen=True, slots=True)
class LeaderConfig:
    replica_lag_time_max_ms: int = 30_000          # replica.lag.time.max.ms
    min_insync_replicas: int = 1                   # min.insync.replicas
    eligible_local_log_bytes: int = -1             # leader.election.eligible.local.log.bytes
    report_interval_ms: int = LOCAL_LOG_REPORT_INTERVAL_MS
    alter_partition_backoff: ExponentialBackoff = field(
        default_factory=lambda: ExponentialBackoff(initial_ms=100, max_ms=10_000))


class LeaderUpdate(NamedTuple):
    """What an entry point changed: the high watermark and an AlterPartition to send, if any (a
    tuple: one is made on every append)."""
    high_watermark: int
    hw_advanced: bool = False
    alter_partition: AlterPartitionItem | None = None
    error: int = ErrorCode.NONE                    # NOT_LEADER_OR_FOLLOWER for an unknown follower


class LeaderState:
    def __init__(self, *, topic_id: bytes, partition: int, leader_id: int, leader_epoch: int,
                 partition_epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...],
                 high_watermark: int, log_end_offset: int, now_ms: int,
                 config: LeaderConfig = LeaderConfig(), leader_broker_epoch: int = UNKNOWN,
                 fenced: frozenset[int] = frozenset(),
                 committed_local_logs: dict[int, LocalLog] | None = None, recovering: bool = False) -> None:
        assert leader_id in replicas and leader_id in isr, (leader_id, replicas, isr)
        assert 0 <= high_watermark <= log_end_offset, (high_watermark, log_end_offset)
        self.topic_id, self.partition = topic_id, partition
        self.leader_id, self.leader_epoch = leader_id, leader_epoch
        self.leader_broker_epoch = leader_broker_epoch
        self.replicas = tuple(replicas)
        self.config = config                       # after the replicas: it sets effective_min_isr
        self.fenced = frozenset(fenced)
        self.epoch_start_offset = log_end_offset   # first offset of this leader epoch
        self._leader_leo = log_end_offset          # as of the latest append (``on_leader_append``)
        self.isr_state = IsrState(tuple(isr), partition_epoch)
        self.followers: dict[int, ReplicaState] = {}
        self._sync_followers(now_ms)
        self.leader_local_log = UNKNOWN_LOCAL_LOG
        self.committed_local_logs: dict[int, LocalLog] = dict(committed_local_logs or {})
        self._last_report_ms: int | None = None
        self._hw = high_watermark
        # LeaderRecoveryState RECOVERING (KIP-704: elected uncleanly): there is no transaction state to
        # rebuild, so the leader is recovered at once and tells the controller (AlterPartition RECOVERED)
        self.recovering = recovering

    # --- queries -----------------------------------------------------------------------------
    @property
    def high_watermark(self) -> int:
        return self._hw

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR (the controller's)."""
        return self.isr_state.isr

    @property
    def partition_epoch(self) -> int:
        return self.isr_state.partition_epoch

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr_state.maximal_isr

    @property
    def config(self) -> LeaderConfig:
        return self._config

    @config.setter
    def config(self, config: LeaderConfig) -> None:
        self._config = config
        self._set_min_isr()

    def _set_min_isr(self) -> None:
        """``effective_min_isr``, computed when the config or the replicas change, not per append."""
        self.effective_min_isr = max(1, min(self._config.min_insync_replicas, len(self.replicas)))

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr_state.isr) < self.effective_min_isr

    def report_due(self, now_ms: int) -> bool:
        """A KIP-1303 report may be proposed by a tick now (none sent yet, or the interval passed)."""
        last = self._last_report_ms
        return last is None or now_ms - last >= self._config.report_interval_ms

    def needs_tick(self, leader_leo: int, now_ms: int) -> bool:
        """Whether a tick could change anything now: not ``settled``, or a report may be due (a
        settled leader's tick only refreshes the leader's local-log figures, which it reads again
        before any report)."""
        return self.report_due(now_ms) or not self.settled(leader_leo)

    def low_watermark(self, leader_log_start: int) -> int:
        """DeleteRecords' low watermark: the smallest log start over the leader and the ISR followers."""
        return low_watermark(self.leader_id, leader_log_start, self.isr,
                             {r: s.log_start_offset for r, s in self.followers.items()})

    def local_log_of(self, replica_id: int) -> LocalLog:
        if replica_id == self.leader_id:
            return self.leader_local_log
        r = self.followers.get(replica_id)
        return LocalLog(r.local_log_start_timestamp, r.local_log_size_bytes) if r else UNKNOWN_LOCAL_LOG

    # --- entry points ------------------------------------------------------------------------
    def on_follower_fetch(self, replica_id: int, fetch_offset: int, *, now_ms: int, leader_leo: int,
                          log_start_offset: int = UNKNOWN, broker_epoch: int = UNKNOWN,
                          local_log_start_timestamp: int = UNKNOWN,
                          local_log_size_bytes: int = UNKNOWN) -> LeaderUpdate:
        """A follower fetched at ``fetch_offset`` (already checked: no DivergingEpoch, in range)."""
        r = self.followers.get(replica_id)
        if r is None:
            return LeaderUpdate(self._hw, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
        assert fetch_offset <= leader_leo, (fetch_offset, leader_leo)
        r.update_fetch(fetch_offset, log_start_offset, now_ms, leader_leo, broker_epoch,
                       local_log_start_timestamp, local_log_size_bytes)
        self._maybe_expand(r)
        advanced = self._maybe_increment_hw(leader_leo, now_ms)
        return LeaderUpdate(self._hw, advanced, self._maybe_send(now_ms))

    def on_leader_append(self, leader_leo: int, now_ms: int,
                         replica_fetch_ms: Mapping[int, int] | None = None) -> LeaderUpdate:
        """The leader's log grew to ``leader_leo``.  ``replica_fetch_ms``: each follower's latest Fetch
        here; a follower in a fetch session names a partition only when its position moves, so one
        that had the whole log before this append was caught up as of that Fetch (Kafka's rule,
        applied now instead of on a fetch that would name the partition)."""
        if replica_fetch_ms is not None and self.followers:
            for rid, r in self.followers.items():
                r.credit_unnamed_fetch(self._leader_leo, replica_fetch_ms.get(rid, UNKNOWN))
        self._leader_leo = leader_leo
        advanced = self._maybe_increment_hw(leader_leo, now_ms)
        return LeaderUpdate(self._hw, advanced)

    def settled(self, leader_leo: int) -> bool:
        """Nothing for ``tick`` to do until something happens: every replica in the ISR, every one
        holding the leader's whole log, the high watermark there, no proposal (a follower's
        fetch, an append or a metadata update unsettles it; KIP-1303 reports still need a tick
        now and then)."""
        return (self.isr_state.proposal is None and not self.recovering and self._hw == leader_leo
                and len(self.isr_state.isr) == len(self.replicas)
                and (not self.followers or all(r.log_end_offset == leader_leo for r in self.followers.values())))

    def tick(self, now_ms: int, leader_leo: int, leader_local_log: LocalLog | None = None) -> LeaderUpdate:
        if leader_local_log is not None:
            self.leader_local_log = leader_local_log
        self._maybe_shrink(now_ms, leader_leo)
        self._maybe_report(now_ms)
        advanced = self._maybe_increment_hw(leader_leo, now_ms)
        return LeaderUpdate(self._hw, advanced, self._maybe_send(now_ms))

    def on_alter_partition_response(self, error_code: int, *, now_ms: int, leader_leo: int,
                                    leader_epoch: int = -1, partition_epoch: int = -1,
                                    isr: tuple[int, ...] = ()) -> LeaderUpdate:
        """The controller's answer for our partition (top-level errors are passed here too)."""
        p = self.isr_state.proposal
        if p is None or not p.in_flight or p.sent is None:
            return LeaderUpdate(self._hw)            # superseded by a metadata update
        if error_code == ErrorCode.NONE:
            self._apply_success(p.sent, leader_epoch, partition_epoch, tuple(isr))
        elif error_code in _REJECTED:
            self.isr_state.drop()
        elif error_code in _STALE:
            self.isr_state.get_stuck()
        else:
            self._retry_later(now_ms)
        advanced = self._maybe_increment_hw(leader_leo, now_ms)
        return LeaderUpdate(self._hw, advanced, self._maybe_send(now_ms))

    def on_alter_partition_failure(self, now_ms: int) -> None:
        """The request got no answer (connection lost, timeout): retry after a backoff."""
        p = self.isr_state.proposal
        if p is not None and p.in_flight:
            self._retry_later(now_ms)

    def on_partition_metadata(self, *, leader_epoch: int, partition_epoch: int, isr: tuple[int, ...],
                              replicas: tuple[int, ...], now_ms: int, leader_leo: int,
                              fenced: frozenset[int] = frozenset(), recovering: bool | None = None) -> LeaderUpdate:
        """A metadata image for this partition within our leader epoch."""
        assert leader_epoch == self.leader_epoch, "a new leader epoch needs a new LeaderState"
        self.fenced = frozenset(fenced)
        if recovering is not None and partition_epoch >= self.partition_epoch:
            self.recovering = recovering
        if partition_epoch > self.partition_epoch:
            assert self.leader_id in isr, (self.leader_id, isr)
            self.replicas = tuple(replicas)
            self._set_min_isr()
            self.isr_state.commit(tuple(isr), partition_epoch)
            self._sync_followers(now_ms)
        advanced = self._maybe_increment_hw(leader_leo, now_ms)
        return LeaderUpdate(self._hw, advanced, self._maybe_send(now_ms))

    # --- rules -------------------------------------------------------------------------------
    def _sync_followers(self, now_ms: int) -> None:
        wanted = [r for r in self.replicas if r != self.leader_id]
        for rid in list(self.followers):
            if rid not in wanted:
                del self.followers[rid]
        for rid in wanted:
            if rid not in self.followers:
                state = ReplicaState(rid)
                state.reset(now_ms, in_isr=rid in self.isr)
                self.followers[rid] = state

    def _eligible(self, replica_id: int) -> bool:
        return replica_id in self.replicas and replica_id not in self.fenced

    def _maybe_increment_hw(self, leader_leo: int, now_ms: int) -> bool:
        if len(self.isr_state.isr) < self.effective_min_isr:
            return False
        new_hw = leader_leo
        if self.followers:
            maximal = self.maximal_isr
            lag = self._config.replica_lag_time_max_ms
            for rid, r in self.followers.items():
                if r.log_end_offset >= new_hw:
                    continue
                waits = rid in maximal or (r.is_caught_up(leader_leo, now_ms, lag) and self._eligible(rid))
                if waits:
                    new_hw = r.log_end_offset
        if new_hw > self._hw:
            self._hw = new_hw
            return True
        return False

    def _maybe_expand(self, r: ReplicaState) -> None:
        if self.isr_state.proposal is not None or r.replica_id in self.isr or not self._eligible(r.replica_id):
            return
        if r.log_end_offset >= self._hw and r.log_end_offset >= self.epoch_start_offset:
            self.isr_state.propose(ProposalKind.EXPAND, self.isr + (r.replica_id,))

    def out_of_sync_replicas(self, now_ms: int, leader_leo: int) -> list[int]:
        lag = self.config.replica_lag_time_max_ms
        return [rid for rid in self.isr if rid != self.leader_id
                and not self.followers[rid].is_caught_up(leader_leo, now_ms, lag)]

    def _maybe_shrink(self, now_ms: int, leader_leo: int) -> None:
        if self.isr_state.proposal is not None:
            return
        out = self.out_of_sync_replicas(now_ms, leader_leo)
        if out:
            self.isr_state.propose(ProposalKind.SHRINK, tuple(r for r in self.isr if r not in out))

    def _maybe_report(self, now_ms: int) -> None:
        if self.isr_state.proposal is not None:
            return
        if self.recovering:
            self.isr_state.propose(ProposalKind.REPORT, self.isr)     # sent with LeaderRecoveryState RECOVERED
            return
        if self._last_report_ms is not None and now_ms - self._last_report_ms < self.config.report_interval_ms:
            return
        threshold = self.config.eligible_local_log_bytes
        if any(changed_materially(self.committed_local_logs.get(rid, UNKNOWN_LOCAL_LOG),
                                  self.local_log_of(rid), threshold) for rid in self.isr):
            self.isr_state.propose(ProposalKind.REPORT, self.isr)

    def _maybe_send(self, now_ms: int) -> AlterPartitionItem | None:
        if not self.isr_state.ready_to_send(now_ms):
            return None
        p = self.isr_state.proposal
        assert p is not None                       # ready_to_send: a proposal waits
        members = tuple(IsrMember(rid, self._broker_epoch(rid), self.local_log_of(rid)) for rid in p.new_isr)
        item = AlterPartitionItem(self.topic_id, self.partition, self.leader_epoch, self.partition_epoch,
                                  members, p.kind.value)
        self.isr_state.mark_sent(item)
        self._last_report_ms = now_ms
        return item

    def _broker_epoch(self, rid: int) -> int:
        if rid == self.leader_id:
            return self.leader_broker_epoch
        return self.followers[rid].broker_epoch

    def _apply_success(self, sent: AlterPartitionItem, leader_epoch: int, partition_epoch: int,
                       isr: tuple[int, ...]) -> None:
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            self.isr_state.drop()                  # stale answer; the metadata update will follow
            return
        self.isr_state.commit(isr, partition_epoch)
        self.recovering = False                    # every request we send says RECOVERED
        for m in sent.new_isr:
            if m.broker_id in isr:
                self.committed_local_logs[m.broker_id] = m.local_log

    def _retry_later(self, now_ms: int) -> None:
        proposal = self.isr_state.proposal
        attempts = proposal.attempts if proposal is not None else 0
        self.isr_state.retry_later(now_ms + self.config.alter_partition_backoff.delay_ms(attempts))
