"""Deterministic simulation: an EMPTY replica joins a TIERED partition under faults (KIP-1023, KIP-1303).

``TieredReplSim`` extends ``repl_sim.Sim`` (same network, crash, power-loss,
partition and leader-move faults, same controller and acks=all producers):
the partition is tiered, and a reassignment adds broker 4 -- first in the
assignment, so the preferred leader -- with an empty log at a random moment of
the fault phase.  Real cores driven, beyond the base simulator's:

- follower: ``FetcherState`` with ``follower.fetch.last.tiered.offset.enable``
  (``kip1023``) on or off -- its KIP-1023 probe (``take_probes``,
  ``on_tiered_start`` -> ``tiered_start.decide``), KIP-405's
  OFFSET_MOVED_TO_TIERED_STORAGE rebuild (``on_remote_aux_state``), and
  Kafka's out-of-range resolution (``on_leader_offset``); the rebuild picks
  its segment with ``tiered.rebuild_rules.plan_rebuild``, parses the uploaded
  ``leader_epoch_checkpoint`` and rebuilds the real ``LeaderEpochCache``
  (``rebuild_from_remote``);
- leader: ``read_rules.fetch_source`` (OFFSET_MOVED_TO_TIERED_STORAGE below its
  local log start) and ``list_offsets_answer`` (-2/-4/-6, with the leader's own
  highest remote offset), ``copy_rules.copy_candidates`` /
  ``upload_resume_offset`` and ``upload_epochs`` for uploads;
- every replica: ``local_retention_rules.local_segments_to_delete`` against its
  highest remote offset (a follower's from ``lineage.highest_offset_in_lineage``).

The shell model follows ``broker/replica_fetcher.py``: one task per source
leader, sequential -- a probe (four ListOffsets round trips, -1 -2 -4 -6, as
``tiered_start_probe`` asks them), a ListOffsets of the out-of-range
resolution, and a rebuild (KIP-405: -4 and -2 first; then a remote read that
takes a few ms) each block that task's next Fetch; a task whose leader is no
longer followed is cancelled (its rebuild is not applied).  Every ListOffsets
may be lost, delayed or cut like any message; the leader answers with its state
at that moment (so log start, local log start and uploads move between a
probe's questions).

Local retention (``local.retention.bytes``) is 300, 3000 or -1 per seed: -1
keeps every local segment, so the leader's log start == local log start while
segments are uploaded -- the case Kafka's follower copies in full (its test is
disabled, "KIP extension required") and tierlog's probe before the first
fetch starts at the earliest pending upload offset.

Remote storage: uploads are immediate and finished (5% fail); remote retention
now and then moves the leader's log start past its oldest remote segment
(at most to its high watermark), or DeleteRecords moves it to any offset up to
the high watermark, and the remote segments wholly below it are deleted.  Followers take the leader's log start from Fetch
answers.

Invariants after every event (on top of the base simulator's, with the ISR
prefix check reading each replica from its local log start):

- the new replica's local records [local log start, its high watermark) are
  the committed ones (identical to the leader's), and its leader-epoch cache
  agrees with the committed records' epochs over [its log start, its high
  watermark);
- on the controller's leader, its local log plus the finished remote segments
  cover every committed offset from the log start: no acknowledged record is
  unreadable after any election (with KIP-1303 eligibility on and off);
- an upload holds exactly the committed records.

After healing: broker 4 is in the ISR with the others; every replica's log from
its local log start is the leader's, and its epoch cache agrees with the
leader's over [log start, high watermark).
"""
from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

from repl_sim import (
    BROKERS,
    ELIGIBLE_MS,
    FETCH_TIMEOUT_MS,
    START_MS,
    Broker,
    InvariantError,
    Msg,
    Sim,
)
from tiered_log_model import RECORD_BYTES, TieredLog

from tierlog.metadata.leader_election import NO_LEADER
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    Append,
    BuildRemoteLogAuxState,
    LeaderOffsets,
    ListLeaderOffset,
    ProbeTieredStart,
    TruncateFullyAndStartAt,
    UpdateHighWatermark,
)
from tierlog.replication.divergence import check_follower_fetch
from tierlog.replication.tiered_start import TopicTiering
from tierlog.tiered.copy_rules import copy_candidates, upload_resume_offset
from tierlog.tiered.lineage import highest_offset_in_lineage
from tierlog.tiered.local_retention_rules import (
    LocalRetention,
    local_segments_to_delete,
)
from tierlog.tiered.read_rules import (
    FetchSource,
    TieredLogState,
    fetch_source,
    list_offsets_answer,
)
from tierlog.tiered.rebuild_rules import plan_rebuild, rebuilt_log_start
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    TopicIdPartition,
)
from tierlog.tiered.upload_epochs import (
    epoch_entries_in_range,
    leader_epoch_checkpoint,
    parse_leader_epoch_checkpoint,
    segment_leader_epochs,
)

NEW = 4                               # the replica the reassignment adds
TIP = TopicIdPartition(b"\x07" * 16, "t", 0)
LOCAL_RETENTION_BYTES = (300, 3000, -1)   # local.retention.bytes per seed; -1 keeps all: Kafka's gap case
PROBE_TARGETS = (-1, -2, -4, -6)      # as tiered_start_probe asks them
KIP405_TARGETS = (-4, -2)             # as follower_state asks them
UPLOAD_FAIL_P = 0.05


@dataclass
class RemoteSegment:
    meta: RemoteLogSegmentMetadata
    checkpoint: bytes                 # the uploaded .leader_epoch_checkpoint
    records: list


class TieredReplSim(Sim):
    all_brokers = (*BROKERS, NEW)
    tiering = TopicTiering(tiered=True)

    def __init__(self, seed: int, *, kip1023: bool = True, kip1303: bool = False, faults: bool = True,
                 local_retention_bytes: int | None = None) -> None:
        self.kip1023 = kip1023
        super().__init__(seed, faults=faults, kip1303=kip1303)
        self.remote: dict[bytes, RemoteSegment] = {}
        self.log_start = 0                                # the highest log start any leader set
        self.committed_epochs: list[tuple[int, int]] = []  # (epoch, start) of the committed records
        self.added = False
        self.pending: dict[int, tuple[int, int, object]] = {}    # ListOffsets req id -> (bid, broker epoch, cont)
        self.busy: dict[int, set[int]] = {b: set() for b in self.all_brokers}   # sources whose task waits
        self.new_checked = 0                              # broker 4's records verified up to here
        chosen = self.rng.choice(LOCAL_RETENTION_BYTES)
        self.local_retention_bytes = chosen if local_retention_bytes is None else local_retention_bytes
        self.stats.update({"uploads": 0, "upload_failures": 0, "remote_deletes": 0, "local_deletes": 0,
                           "probes": 0, "kip1023_rebuilds": 0, "kip1023_start_at": 0, "kip405_rebuilds": 0,
                           "rebuild_retries": 0, "delete_records": 0, "out_of_range": 0, "new_replica_copied": 0,
                           "new_replica_led": 0, "new_joined_isr": 0})

    def _new_log(self, bid: int) -> TieredLog:
        return TieredLog(random.Random(self.seed * 10 + bid), START_MS)

    def _new_fetchers(self, b: Broker):
        fetchers = super()._new_fetchers(b)
        fetchers.update_last_tiered_offset_enable(self.kip1023)
        return fetchers

    # --- the reassignment ------------------------------------------------------------------
    def add_replica(self) -> None:
        self.replicas = (NEW, *self.replicas)              # preferred: the KIP-1303 case
        self.c_pepoch += 1
        self.added = True
        self._publish()

    # --- leader: serving the tiered log -----------------------------------------------------
    def _tiered_state(self, log: TieredLog) -> TieredLogState:
        return TieredLogState(True, log.log_start_offset, log.local_start, log.log_end_offset, log.highest_remote,
                              tuple(log.cache.entries()))

    def _serve_fetch(self, b: Broker, msg: Msg, part: dict, resp: dict) -> None:
        log, offset = b.log, part["FetchOffset"]
        resp["LogStartOffset"] = log.log_start_offset
        check = check_follower_fetch(offset, part["LastFetchedEpoch"], log.log_start_offset, log.log_end_offset,
                                     log.end_offset_for_epoch(part["LastFetchedEpoch"]))
        if check.error:
            resp["ErrorCode"] = check.error
            return
        if check.diverging:
            resp["DivergingEpoch"] = {"Epoch": check.diverging_epoch, "EndOffset": check.diverging_end_offset}
            return
        source = fetch_source(self._tiered_state(log), offset, from_follower=True)
        if source is FetchSource.OFFSET_MOVED_TO_TIERED_STORAGE:
            resp["ErrorCode"] = ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE
            return
        if source is FetchSource.OFFSET_OUT_OF_RANGE:
            resp["ErrorCode"] = ErrorCode.OFFSET_OUT_OF_RANGE
            return
        super()._serve_fetch(b, msg, part, resp)
        resp["LogStartOffset"] = log.log_start_offset

    def on_list_offsets(self, msg: Msg) -> None:
        b = self.brokers[msg.dst]
        epoch, target = msg.body["epoch"], msg.body["target"]
        error, offset = ErrorCode.NONE, -1
        if b.leader is None:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER if epoch <= b.leader_epoch else ErrorCode.UNKNOWN_LEADER_EPOCH
        elif epoch != b.leader.leader_epoch:
            error = (ErrorCode.FENCED_LEADER_EPOCH if epoch < b.leader.leader_epoch
                     else ErrorCode.UNKNOWN_LEADER_EPOCH)
        elif target == -1:
            offset = b.log.log_end_offset
        else:
            offset = list_offsets_answer(self._tiered_state(b.log), target).offset
        self.send(Msg("list_offsets_resp", b.bid, msg.src, {"error": error, "offset": offset}, msg.req_id))

    # --- leader: uploads and remote retention; every replica: local retention --------------
    def broker_tick(self, bid: int) -> None:
        b = self.brokers[bid]
        if b.alive and bid in self.replicas:
            if b.leader is not None:
                self._copy_pass(b)
                if self.faults and self.rng.random() < 0.03:
                    self._remote_retention(b)
            elif self.rng.random() < 0.3:
                self._refresh_highest_remote(b.log)
            if self.rng.random() < 0.3:
                self._local_retention(b, self.local_retention_bytes)
        super().broker_tick(bid)

    def _finished(self) -> list[RemoteLogSegmentMetadata]:
        return [s.meta for s in self.remote.values()]

    def _refresh_highest_remote(self, log: TieredLog) -> None:
        """A follower's view (Log.highest_offset_in_remote_storage from its metadata cache)."""
        found = highest_offset_in_lineage(self._finished(), log.cache.entries(), log.log_end_offset)
        log.highest_remote = max(log.highest_remote, found)

    def _copy_pass(self, b: Broker) -> None:
        log = b.log
        entries = log.cache.entries()
        log.highest_remote = upload_resume_offset(log.highest_remote, self._finished(), entries, log.log_end_offset)
        candidates = copy_candidates(log.segments(), highest_remote_offset=log.highest_remote,
                                     log_start_offset=log.log_start_offset, last_stable_offset=b.hw)
        if not candidates:
            return
        seg = candidates[0]
        if self.rng.random() < UPLOAD_FAIL_P:
            self.stats["upload_failures"] += 1
            return
        start = max(seg.base_offset, log.highest_remote + 1, log.log_start_offset)
        records = log.entries[start:seg.next_offset]
        if records != self.committed[start:seg.next_offset]:
            raise InvariantError(f"leader {b.bid} uploads [{start}, {seg.next_offset}) that is not committed")
        epochs = segment_leader_epochs(entries, start, seg.next_offset)
        meta = RemoteLogSegmentMetadata(RemoteLogSegmentId(TIP, uuid.UUID(int=self.rng.getrandbits(128)).bytes),
                                        start, seg.next_offset - 1, 0, b.bid, self.now, epochs,
                                        RECORD_BYTES * len(records))
        self.remote[meta.segment_id.id] = RemoteSegment(meta, leader_epoch_checkpoint(entries, seg.next_offset),
                                                        records)
        log.highest_remote = max(log.highest_remote, meta.end_offset)
        self.stats["uploads"] += 1

    def _remote_retention(self, b: Broker) -> None:
        """retention.bytes reached: the oldest remote segment goes, the log start moves past it;
        or DeleteRecords moves the log start anywhere up to the high watermark (above the
        highest uploaded offset too: KIP-1023's "pending upload offset below log start")."""
        if self.rng.random() < 0.3:
            new_start = self.rng.randint(b.log.log_start_offset, max(b.log.log_start_offset, b.hw))
            self.stats["delete_records"] += 1
        elif self.remote:
            oldest = min(self.remote.values(), key=lambda s: s.meta.end_offset).meta
            new_start = min(oldest.end_offset + 1, b.hw)
        else:
            return
        if new_start <= b.log.log_start_offset:
            return
        b.log.raise_log_start(new_start)
        self.log_start = max(self.log_start, new_start)
        for sid, seg in list(self.remote.items()):
            if seg.meta.end_offset < new_start:
                del self.remote[sid]
                self.stats["remote_deletes"] += 1

    def _local_retention(self, b: Broker, limit_bytes: int) -> int:
        log = b.log
        count = local_segments_to_delete(log.segments(), LocalRetention(-1, -1, -1, limit_bytes), now_ms=self.now,
                                         high_watermark=min(b.hw, log.flushed),
                                         highest_remote_offset=log.highest_remote,
                                         log_start_offset=log.log_start_offset)
        if count:
            log.delete_local_segments(count)
            log.local_log_start_timestamp = self.now - self.rng.randint(0, ELIGIBLE_MS // 3)
            self.stats["local_deletes"] += count
        return count

    def delete_local(self, bid: int) -> None:
        """The base fault "tiering deletes local segments": a local retention pass keeping little."""
        if self._local_retention(self.brokers[bid], 100):
            self.stats["local_deletions"] += 1

    # --- follower: the fetcher task (broker/replica_fetcher.py) --------------------------------
    def _maybe_fetch(self, bid: int, broker_epoch: int) -> None:
        b = self.brokers[bid]
        if not b.alive or b.broker_epoch != broker_epoch:
            return
        for source, fetcher in list(b.fetchers.fetchers.items()):
            if source in self.busy[bid]:
                continue
            probes = fetcher.take_probes(self.now)
            if probes:
                self._run_actions(b, source, fetcher, list(probes))
                continue
            req = fetcher.build_fetch_request(self.now)
            if req is None:
                continue
            self.next_id += 1
            b.fetch_req[source] = self.next_id
            self.send(Msg("fetch", bid, source, req, self.next_id))
            self.at(self.now + FETCH_TIMEOUT_MS, self._fetch_timeout, bid, source, self.next_id)

    def on_fetch_resp(self, msg: Msg) -> None:
        b = self.brokers[msg.dst]
        if b.fetch_req.get(msg.src) != msg.req_id:
            return
        del b.fetch_req[msg.src]
        fetcher = b.fetchers.fetchers.get(msg.src)
        if fetcher is None:
            return
        self._run_actions(b, msg.src, fetcher, fetcher.handle_fetch_response(msg.body, self.now))

    def _run_actions(self, b: Broker, source: int, fetcher, actions: list) -> None:
        """Apply ``actions`` in order; an action that needs the network or remote storage blocks
        the task (``busy``) and goes on with its follow-ups and the rest when it is done."""
        self.busy[b.bid].add(source)
        epoch = b.broker_epoch
        while actions:
            action = actions.pop(0)
            if isinstance(action, ProbeTieredStart):
                self.stats["probes"] += 1
                self._probe(b, source, action, lambda ups, rest=actions: self._resume(b, epoch, source, fetcher,
                                                                                      ups + rest))
                return
            if isinstance(action, BuildRemoteLogAuxState):
                self._rebuild(b, source, action, lambda ups, rest=actions: self._resume(b, epoch, source, fetcher,
                                                                                        ups + rest))
                return
            if isinstance(action, ListLeaderOffset):
                self.stats["out_of_range"] += 1
                self._list_offset(b, source, action.leader_epoch, action.timestamp,
                                  lambda err, off, a=action, rest=actions: self._resume(
                                      b, epoch, source, fetcher,
                                      fetcher.on_leader_offset(a.key, a.leader_epoch, a.timestamp, err, off,
                                                               self.now) + rest))
                return
            self._apply(b, action)
        self.busy[b.bid].discard(source)
        self._fetch_soon(b)

    def _resume(self, b: Broker, epoch: int, source: int, fetcher, actions: list) -> None:
        if not b.alive or b.broker_epoch != epoch or b.fetchers.fetchers.get(source) is not fetcher:
            self.busy[b.bid].discard(source)          # the task was cancelled meanwhile
            return
        self._run_actions(b, source, fetcher, actions)

    def _list_offset(self, b: Broker, source: int, leader_epoch: int, target: int, cont) -> None:
        """One ListOffsets as a replica; ``cont(error, offset)`` (REQUEST_TIMED_OUT when lost)."""
        self.next_id += 1
        req = self.next_id
        self.pending[req] = (b.bid, b.broker_epoch, cont)
        self.send(Msg("list_offsets", b.bid, source, {"epoch": leader_epoch, "target": target}, req))
        self.at(self.now + FETCH_TIMEOUT_MS, self._list_offsets_done, req, ErrorCode.REQUEST_TIMED_OUT, -1)

    def on_list_offsets_resp(self, msg: Msg) -> None:
        self._list_offsets_done(msg.req_id, msg.body["error"], msg.body["offset"])

    def _list_offsets_done(self, req: int, error: int, offset: int) -> None:
        entry = self.pending.pop(req, None)
        if entry is None:
            return
        bid, epoch, cont = entry
        b = self.brokers[bid]
        if b.alive and b.broker_epoch == epoch:
            cont(error, offset)

    def _probe(self, b: Broker, source: int, probe: ProbeTieredStart, done) -> None:
        """tiered_start_probe: -1, then -2 -4 -6 unless the leader's log is empty."""
        fetcher = b.fetchers.fetchers[source]
        answers: dict[int, int] = {}

        def finish(error: int, offsets: LeaderOffsets | None) -> None:
            done(fetcher.on_tiered_start(probe.key, probe.leader_epoch, error, offsets, self.now))

        def ask(index: int) -> None:
            def on_answer(error: int, offset: int) -> None:
                if error:
                    return finish(error, None)
                answers[PROBE_TARGETS[index]] = offset
                if answers[-1] == 0:
                    return finish(ErrorCode.NONE, LeaderOffsets(0, 0, 0, 0))
                if index + 1 == len(PROBE_TARGETS):
                    return finish(ErrorCode.NONE, LeaderOffsets(*(answers[t] for t in PROBE_TARGETS)))
                ask(index + 1)
            self._list_offset(b, source, probe.leader_epoch, PROBE_TARGETS[index], on_answer)
        ask(0)

    def _rebuild(self, b: Broker, source: int, action: BuildRemoteLogAuxState, done) -> None:
        """follower_state.build_remote_log_aux_state: (KIP-405: ask -4, -2), read remote, rebuild."""
        fetcher = b.fetchers.fetchers[source]

        def report(error: int) -> None:
            if error:
                self.stats["rebuild_retries"] += 1
            done(fetcher.on_remote_aux_state(action.key, action.leader_epoch, error, self.now))

        def read_remote(local_start: int, log_start: int) -> None:
            self.at(self.now + self.rng.randint(1, 15), apply, local_start, log_start)

        def apply(local_start: int, log_start: int) -> None:
            if not b.alive or b.fetchers.fetchers.get(source) is not fetcher:
                self.busy[b.bid].discard(source)      # cancelled: the shell's task is gone
                return
            plan = plan_rebuild(self._finished(), log_start, local_start)
            if plan is None:
                return report(ErrorCode.REPLICA_NOT_AVAILABLE)
            epochs = parse_leader_epoch_checkpoint(self.remote[plan.segment.segment_id.id].checkpoint)
            b.log.rebuild_from_remote(rebuilt_log_start(plan, epochs), plan.local_log_start_offset, epochs)
            b.log.local_log_start_timestamp = self.now
            b.hw = plan.local_log_start_offset
            self.verified[b.bid] = min(self.verified[b.bid], plan.local_log_start_offset)
            self.stats["kip1023_rebuilds" if action.start_offset >= 0 else "kip405_rebuilds"] += 1
            if b.bid == NEW:
                self.new_checked = plan.local_log_start_offset
            report(ErrorCode.NONE)

        if action.start_offset >= 0:
            return read_remote(action.start_offset, action.log_start_offset)

        def on_local_start(error: int, local_start: int) -> None:
            if error:
                return report(error)
            self._list_offset(b, source, action.leader_epoch, KIP405_TARGETS[1],
                              lambda e, log_start: report(e) if e else read_remote(local_start, log_start))
        self._list_offset(b, source, action.leader_epoch, KIP405_TARGETS[0], on_local_start)

    def _apply(self, b: Broker, action) -> None:
        log = b.log
        if isinstance(action, TruncateFullyAndStartAt):
            if b.bid in self.c_isr and action.offset > len(self.committed) and log.log_end_offset > 0:
                raise InvariantError(f"ISR member {b.bid} restarts its log at {action.offset}")
            log.restart_at(action.offset, action.offset)
            log.local_log_start_timestamp = self.now
            b.hw = action.offset
            self.verified[b.bid] = min(self.verified[b.bid], action.offset)
            if b.bid == NEW:
                self.new_checked = action.offset
            self.stats["kip1023_start_at"] += 1
            return
        if isinstance(action, Append) and b.bid == NEW:
            self.stats["new_replica_copied"] += len(action.records)
        super()._apply(b, action)
        if isinstance(action, UpdateHighWatermark) and action.leader_log_start_offset > log.log_start_offset:
            log.raise_log_start(min(action.leader_log_start_offset, b.hw))

    def _truncate(self, b: Broker, offset: int) -> None:
        super()._truncate(b, offset)
        if b.bid == NEW:
            self.new_checked = min(self.new_checked, b.log.log_end_offset)

    def restart(self, bid: int) -> None:
        self.busy[bid].clear()
        super().restart(bid)

    # --- elections: who leads ---------------------------------------------------------------
    def _elect(self, current: int) -> None:
        super()._elect(current)
        if self.c_leader == NEW:
            self.stats["new_replica_led"] += 1

    def move_leader(self) -> None:
        before = self.c_leader
        super().move_leader()
        if self.c_leader == NEW and before != NEW:
            self.stats["new_replica_led"] += 1

    def on_alter(self, msg: Msg) -> None:
        was_in = NEW in self.c_isr
        super().on_alter(msg)
        if NEW in self.c_isr and not was_in:
            self.stats["new_joined_isr"] += 1

    # --- invariants -------------------------------------------------------------------------
    def _note_hw(self, b: Broker, hw: int) -> None:
        before = len(self.committed)
        super()._note_hw(b, hw)
        for offset in range(before, len(self.committed)):
            epoch = self.committed[offset][0]
            if not self.committed_epochs or self.committed_epochs[-1][0] != epoch:
                self.committed_epochs.append((epoch, offset))

    def _verify_prefix(self, bid: int, upto: int) -> None:
        log = self.brokers[bid].log
        start = max(self.verified[bid], log.local_start)
        if log.log_end_offset < upto:
            raise InvariantError(f"replica {bid} has {log.log_end_offset} records, {upto} are committed")
        if log.entries[start:upto] != self.committed[start:upto]:
            raise InvariantError(f"replica {bid} differs from the committed records in [{start}, {upto})")
        self.verified[bid] = max(self.verified[bid], upto)

    def check(self) -> None:
        super().check()
        if self.added:
            self._check_new_replica()
        self._check_readable()

    def _check_new_replica(self) -> None:
        b = self.brokers[NEW]
        log = b.log
        upto = min(b.hw, log.log_end_offset, len(self.committed))
        start = max(self.new_checked, log.local_start)
        if upto > start:
            if log.entries[start:upto] != self.committed[start:upto]:
                raise InvariantError(f"new replica's records in [{start}, {upto}) differ from the leader's")
            self.new_checked = upto
        self._check_epochs(NEW, log.log_start_offset, upto)

    def _check_epochs(self, bid: int, start: int, end: int) -> None:
        if end <= start:
            return
        mine = epoch_entries_in_range(self.brokers[bid].log.cache.entries(), start, end)
        truth = epoch_entries_in_range(self.committed_epochs, start, end)
        if mine != truth:
            raise InvariantError(f"replica {bid}'s leader-epoch cache over [{start}, {end}) is {mine}, "
                                 f"the records' epochs are {truth}")

    def _check_readable(self) -> None:
        """Every committed offset from the log start is local on the leader or in remote storage."""
        if self.c_leader == NO_LEADER:
            return
        log = self.brokers[self.c_leader].log
        covered = self.log_start
        spans = sorted((s.meta.start_offset, s.meta.end_offset) for s in self.remote.values())
        spans.append((log.local_start, log.log_end_offset - 1))
        for start, end in sorted(spans):
            if start <= covered:
                covered = max(covered, end + 1)
        if covered < len(self.committed):
            raise InvariantError(f"acked offset {covered} is unreadable on leader {self.c_leader} (log start "
                                 f"{self.log_start}, local from {log.local_start}, remote {spans[:-1]})")

    def run(self, fault_ms: int = 2500, heal_ms: int = 1500) -> None:
        self.at(self.now + self.rng.randint(fault_ms // 4, fault_ms * 3 // 4), self.add_replica)
        super().run(fault_ms, heal_ms)

    def check_liveness(self, acked_before: int) -> None:
        if not self.added or NEW not in self.c_isr:
            raise InvariantError(f"the new replica is not in the ISR {self.c_isr} after healing")
        leader = self.brokers[self.c_leader]
        if leader.leader is None or leader.hw != leader.log.log_end_offset:
            raise InvariantError(f"leader {leader.bid} HW {leader.hw} != LEO {leader.log.log_end_offset}")
        for b in self.brokers.values():
            log = b.log
            both = max(log.local_start, leader.log.local_start)
            if log.log_end_offset != leader.log.log_end_offset or log.entries[both:] != leader.log.entries[both:]:
                raise InvariantError(f"replica {b.bid} differs from leader {leader.bid} after healing")
            self._check_epochs(b.bid, max(log.log_start_offset, self.log_start), leader.hw)
        if self.stats["acked"] <= acked_before:
            raise InvariantError("nothing acked after healing")
        self._check_readable()
