"""Deterministic simulation of ONE partition: 3 replicas, a tiny controller, acks=all producers.

Everything runs on one seeded ``random.Random`` and a virtual clock; the cores
under test are the real ``tierlog.replication`` classes (LeaderState,
AcksPurgatory, ReplicaFetchers / FetcherState, divergence rules) and
``tierlog.metadata.leader_election.elect_leader``; the shell around them (serving
Fetch, Produce, AlterPartition, metadata) is a small model of the broker's.

Model:

- Log: a list of (epoch, value) per offset, a leader-epoch cache of
  (epoch, start offset), and a flushed prefix (flushed every ~30 ms).
- Network: every Fetch, Produce and AlterPartition message and answer may be
  dropped, delayed (1-12 ms, so reordered) or duplicated, and is dropped
  across a network partition.  A request unanswered in time fails (the real
  connection would be closed, so a late answer is never matched to a newer
  request).  Metadata from the controller (the metadata log) is delayed but
  delivered in order and never lost, as a broker replays the metadata log.
- Crash model: at most one replica is down at a time.  A *process crash*
  (kill -9) keeps the whole log (page cache) and loses all in-memory state
  (high watermark, leader and fetcher state).  A *power loss* also drops the
  unflushed suffix; it is only injected while all three replicas are up and
  in the controller's ISR, so every committed record stays on two logs.  A
  down broker is fenced at once: the controller removes it from the ISR
  (unless it is the last member) and elects a new leader from the ISR when
  it led.  The controller also moves leadership at random (a preferred
  election), which leaves a stale leader acting until metadata reaches it.
- Controller: holds leader, leader epoch, ISR, partition epoch; answers
  AlterPartition with FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
  INELIGIBLE_REPLICA (a down member) or success (partition epoch + 1).
- KIP-1303 (``Sim(seed, kip1303=True)``): the controller keeps the local log
  coverage each AlterPartition reports and elects (fence, restart, preferred
  elections) with ``leader.election.eligible.local.log.ms`` = ``ELIGIBLE_MS``
  through the real ``elect_leader``; a fault "tiering deletes local segments"
  moves a replica's LocalLogStartTimestamp to a recent time (its local log
  now covers less than ``ELIGIBLE_MS``) and shrinks its LocalLogSizeBytes,
  which its next Fetch reports.  Preferred elections go to the first replica
  of a random assignment order after the eligibility sort.  Off, the same
  seeds elect as before.  Either way no acknowledged record may be lost.

Invariants after every event: records below any leader's high watermark
(``committed``) are never lost or reordered and match every acked record;
a leader's high watermark never goes down within its epoch; every member of
the controller's ISR holds exactly ``committed`` as its log prefix.  After
healing: one leader, ISR of 3, every acked record readable on every replica.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from tierlog.metadata.cluster_records import ReplicaLogCoverage
from tierlog.metadata.leader_election import (
    DISABLED,
    NO_LEADER,
    Election,
    EligibilityThresholds,
    elect_leader,
    eligibility_sort,
)
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    AcksPurgatory,
    Append,
    FetcherConfig,
    FollowerLogReads,
    LeaderConfig,
    LeaderState,
    LocalLog,
    ReplicaFetchers,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateHighWatermark,
    check_follower_fetch,
)
from tierlog.replication.backoff import ExponentialBackoff
from tierlog.replication.tiered_start import NOT_TIERED

TOPIC = b"\x07" * 16
KEY = (TOPIC, 0)
BROKERS = (1, 2, 3)
MIN_ISR = 2
LAG_MS = 120
PRODUCE_TIMEOUT_MS = 300
FETCH_TIMEOUT_MS = 60
ALTER_TIMEOUT_MS = 80
FETCH_INTERVAL_MS = 3
MAX_FETCH_RECORDS = 25
START_MS = 1_000_000
ELIGIBLE_MS = 1500              # KIP-1303 leader.election.eligible.local.log.ms in the simulation


class InvariantError(AssertionError):
    pass


# --- the log -------------------------------------------------------------------------------
class MemLog(FollowerLogReads):
    def __init__(self) -> None:
        self.entries: list[tuple[int, str]] = []     # offset -> (epoch, value)
        self.epochs: list[tuple[int, int]] = []      # (epoch, start offset), both increasing
        self.flushed = 0
        self.local_log_start_timestamp = START_MS    # KIP-1303: moved by simulated local deletion
        self.locally_deleted = 0                     # records counted out of LocalLogSizeBytes

    @property
    def log_end_offset(self) -> int:
        return len(self.entries)

    log_start_offset = 0

    @property
    def local_log_size_bytes(self) -> int:
        return 10 * max(0, len(self.entries) - self.locally_deleted)

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs[-1][0] if self.epochs else None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        if epoch == -1 or not self.epochs:
            return -1, -1
        if epoch == self.epochs[-1][0]:
            return epoch, self.log_end_offset
        higher = next((i for i, (e, _) in enumerate(self.epochs) if e > epoch), len(self.epochs))
        if higher == len(self.epochs):
            return -1, -1
        if higher == 0:
            return epoch, self.epochs[0][1]
        return self.epochs[higher - 1][0], self.epochs[higher][1]

    def assign_epoch(self, epoch: int, start: int) -> None:
        if self.epochs and self.epochs[-1][0] == epoch and start >= self.epochs[-1][1]:
            return
        while self.epochs and (self.epochs[-1][0] >= epoch or self.epochs[-1][1] >= start):
            self.epochs.pop()
        self.epochs.append((epoch, start))

    def append(self, epoch: int, value: str) -> int:
        self.assign_epoch(epoch, len(self.entries))
        self.entries.append((epoch, value))
        return len(self.entries) - 1

    def truncate_to(self, offset: int) -> None:
        """Drop records from ``offset`` and epoch entries starting there or later."""
        if offset >= len(self.entries):
            return
        del self.entries[offset:]
        self.flushed = min(self.flushed, offset)
        while self.epochs and self.epochs[-1][1] >= offset:
            self.epochs.pop()


# --- messages ------------------------------------------------------------------------------
@dataclass
class Msg:
    kind: str
    src: int          # broker id, 0 = controller, negative = client
    dst: int
    body: dict
    req_id: int = 0


@dataclass
class Broker:
    bid: int
    log: MemLog
    alive: bool = True
    broker_epoch: int = 1
    leader_epoch: int = -1           # latest known from metadata
    leader_id: int = NO_LEADER
    hw: int = 0
    leader: LeaderState | None = None
    purgatory: AcksPurgatory | None = None
    fetchers: ReplicaFetchers | None = None
    fetch_req: dict[int, int] = field(default_factory=dict)     # source -> request id in flight
    alter_req: int = 0                                           # request id in flight (0 none)


class Sim:
    tiering = NOT_TIERED                            # the topic's traits the fetchers see (KIP-1023)

    def __init__(self, seed: int, *, faults: bool = True, kip1303: bool = False) -> None:
        self.seed = seed
        self.thresholds = EligibilityThresholds(local_log_ms=ELIGIBLE_MS) if kip1303 else DISABLED
        self.rng = random.Random(seed)
        self.now = START_MS
        self.queue: list = []
        self.seq = 0
        self.faults = faults
        self.replicas: tuple[int, ...] = tuple(BROKERS)       # the controller's assignment
        self.brokers = {b: Broker(b, self._new_log(b)) for b in self.all_brokers}
        for b in self.brokers.values():
            b.fetchers = self._new_fetchers(b)
        # controller state
        self.c_leader, self.c_epoch, self.c_isr, self.c_pepoch = 1, 0, self.replicas, 0
        self.c_local_logs: dict[int, LocalLog] = {}
        self.partitions: set[frozenset[int]] = set()     # cut links
        self.drop_p = 0.05
        self.dup_p = 0.02
        self.next_id = 1
        self.meta_deliver_at = {b: 0 for b in self.all_brokers}
        # checking
        self.committed: list[tuple[int, str]] = []
        self.verified = {b: 0 for b in self.all_brokers}
        self.hw_seen: dict[tuple[int, int], int] = {}
        self.acked: dict[str, int] = {}
        self.producing = True
        self.values = 0
        self.pending_produce: dict[int, str] = {}
        self.errors: dict[int, int] = {}
        self.stats = {"events": 0, "acked": 0, "produce_errors": 0, "crashes": 0, "power_losses": 0,
                      "leader_moves": 0, "truncations": 0, "alter_partitions": 0, "elections": 0,
                      "local_deletions": 0, "ineligible_passed_over": 0}
        for b in self.all_brokers:
            self._send_metadata(b)

    all_brokers: tuple[int, ...] = BROKERS          # the brokers of the cluster (replicas or not)

    def _new_log(self, bid: int) -> MemLog:
        return MemLog()

    def _new_fetchers(self, b: Broker) -> ReplicaFetchers:
        return ReplicaFetchers(b.bid, b.broker_epoch,
                               FetcherConfig(max_wait_ms=0, backoff_ms=10, backoff_max_ms=100))

    # --- scheduling ----------------------------------------------------------------------
    def at(self, t: int, fn, *args) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (t, self.seq, fn, args))

    def run_until(self, t_end: int) -> None:
        while self.queue and self.queue[0][0] <= t_end:
            t, _, fn, args = heapq.heappop(self.queue)
            self.now = t
            fn(*args)
            self.stats["events"] += 1
            self.check()
        self.now = t_end

    def send(self, msg: Msg) -> None:
        if frozenset((msg.src, msg.dst)) in self.partitions:
            return
        if self.faults and self.rng.random() < self.drop_p:
            return
        copies = 2 if self.faults and self.rng.random() < self.dup_p else 1
        for _ in range(copies):
            self.at(self.now + self.rng.randint(1, 12), self._deliver, msg)

    def _deliver(self, msg: Msg) -> None:
        if frozenset((msg.src, msg.dst)) in self.partitions:
            return
        if msg.dst > 0 and not self.brokers[msg.dst].alive:
            return
        getattr(self, "on_" + msg.kind)(msg)

    # --- controller ------------------------------------------------------------------------
    def _send_metadata(self, bid: int) -> None:
        state = {"leader": self.c_leader, "epoch": self.c_epoch, "isr": self.c_isr, "pepoch": self.c_pepoch,
                 "replicas": self.replicas}
        t = max(self.meta_deliver_at[bid], self.now + self.rng.randint(1, 20)) + 1
        self.meta_deliver_at[bid] = t
        self.at(t, self.on_metadata, bid, state)

    def _publish(self) -> None:
        for b in self.all_brokers:
            self._send_metadata(b)

    def _alive(self) -> set[int]:
        return {b for b, br in self.brokers.items() if br.alive}

    def _coverage(self) -> dict[int, ReplicaLogCoverage]:
        return {b: ReplicaLogCoverage(b, ll.start_timestamp, ll.size_bytes) for b, ll in self.c_local_logs.items()}

    def _elect(self, current: int) -> None:
        result = elect_leader(replicas=self.replicas, isr=self.c_isr, leader=current, usable=self._alive(),
                              coverage=self._coverage(), thresholds=self.thresholds, now_ms=self.now)
        plain = elect_leader(replicas=self.replicas, isr=self.c_isr, leader=current, usable=self._alive())
        if result.leader != plain.leader:
            self.stats["ineligible_passed_over"] += 1
        self.c_leader = result.leader
        self.c_epoch += 1
        self.c_pepoch += 1
        self.stats["elections"] += 1

    def fence(self, bid: int) -> None:
        """A broker went down: out of the ISR (unless last), re-elect if it led."""
        if bid in self.c_isr and len(self.c_isr) > 1:
            self.c_isr = tuple(r for r in self.c_isr if r != bid)
            self.c_pepoch += 1
        if self.c_leader == bid:
            self._elect(NO_LEADER)
        self._publish()

    def unfence(self, bid: int) -> None:
        if self.c_leader == NO_LEADER:
            self._elect(NO_LEADER)
        self._publish()

    def move_leader(self) -> None:
        others = [r for r in self.c_isr if r != self.c_leader and self.brokers[r].alive]
        if self.c_leader == NO_LEADER or not others:
            return
        if self.thresholds.enabled:
            # a preferred election over a random assignment order, KIP-1303-sorted
            order = tuple(self.rng.sample(self.replicas, len(self.replicas)))
            result = elect_leader(replicas=order, isr=self.c_isr, leader=self.c_leader, usable=self._alive(),
                                  election=Election.PREFERRED, coverage=self._coverage(),
                                  thresholds=self.thresholds, now_ms=self.now)
            if eligibility_sort(order, self._coverage(), self.thresholds, self.now)[0] != order[0]:
                self.stats["ineligible_passed_over"] += 1
            if result.leader in (NO_LEADER, self.c_leader):
                return
            self.c_leader = result.leader
        else:
            self.c_leader = self.rng.choice(others)
        self.c_epoch += 1
        self.c_pepoch += 1
        self.stats["leader_moves"] += 1
        self._publish()

    def on_alter(self, msg: Msg) -> None:
        item = msg.body["item"]
        new_isr = item.isr_ids
        if item.leader_epoch != self.c_epoch or msg.src != self.c_leader:
            err = ErrorCode.FENCED_LEADER_EPOCH
        elif item.partition_epoch != self.c_pepoch:
            err = ErrorCode.INVALID_UPDATE_VERSION
        elif any(not self.brokers[r].alive for r in new_isr):
            err = ErrorCode.INELIGIBLE_REPLICA
        else:
            err = 0
            self.stats["alter_partitions"] += 1
            if new_isr != self.c_isr:
                self.c_isr = new_isr
            self.c_pepoch += 1
            for m in item.new_isr:
                self.c_local_logs[m.broker_id] = m.local_log
            self._publish()
        body = {"error": err, "leader_epoch": self.c_epoch, "pepoch": self.c_pepoch, "isr": self.c_isr}
        self.send(Msg("alter_resp", 0, msg.src, body, msg.req_id))

    # --- broker: metadata ------------------------------------------------------------------
    def on_metadata(self, bid: int, state: dict) -> None:
        b = self.brokers[bid]
        if not b.alive:
            return
        if state["epoch"] < b.leader_epoch or bid not in state["replicas"]:
            return
        if state["epoch"] > b.leader_epoch:
            self._change_leader(b, state)
        elif b.leader is not None:
            up = b.leader.on_partition_metadata(leader_epoch=state["epoch"], partition_epoch=state["pepoch"],
                                                isr=state["isr"], replicas=state["replicas"], now_ms=self.now,
                                                leader_leo=b.log.log_end_offset)
            self._after_leader_update(b, up)

    def _change_leader(self, b: Broker, state: dict) -> None:
        b.leader_epoch, b.leader_id = state["epoch"], state["leader"]
        if b.purgatory is not None:
            for c in b.purgatory.fail_all():
                self._answer_produce(b, c.token, c.error)
        b.leader, b.purgatory, b.alter_req = None, None, 0
        if state["leader"] == b.bid:
            b.fetchers.stop_following(KEY)
            b.fetch_req.clear()
            b.log.assign_epoch(state["epoch"], b.log.log_end_offset)
            b.hw = min(b.hw, b.log.log_end_offset)
            b.leader = LeaderState(
                topic_id=TOPIC, partition=0, leader_id=b.bid, leader_epoch=state["epoch"],
                partition_epoch=state["pepoch"], replicas=state["replicas"], isr=state["isr"], high_watermark=b.hw,
                log_end_offset=b.log.log_end_offset, now_ms=self.now, leader_broker_epoch=b.broker_epoch,
                config=LeaderConfig(replica_lag_time_max_ms=LAG_MS, min_insync_replicas=MIN_ISR,
                                    report_interval_ms=500,
                                    alter_partition_backoff=ExponentialBackoff(10, 100)))
            b.purgatory = AcksPurgatory(max_pending=200)
        elif state["leader"] == NO_LEADER:
            b.fetchers.stop_following(KEY)
        else:
            b.fetchers.become_follower(KEY, state["leader"], state["epoch"], b.log, self.tiering)
            self._fetch_soon(b)

    # --- broker: leader side ---------------------------------------------------------------
    def _after_leader_update(self, b: Broker, up) -> None:
        if b.leader is None:
            return
        self._note_hw(b, up.high_watermark)
        if up.alter_partition is not None:
            self.next_id += 1
            b.alter_req = self.next_id
            self.send(Msg("alter", b.bid, 0, {"item": up.alter_partition}, b.alter_req))
            self.at(self.now + ALTER_TIMEOUT_MS, self._alter_timeout, b.bid, b.alter_req)
        self._complete(b)

    def _note_hw(self, b: Broker, hw: int) -> None:
        key = (b.bid, b.leader.leader_epoch)
        if hw < self.hw_seen.get(key, 0):
            raise InvariantError(f"HW went down in epoch {key}: {self.hw_seen[key]} -> {hw}")
        self.hw_seen[key] = hw
        b.hw = hw
        if hw > len(self.committed):
            self._verify_prefix(b.bid, len(self.committed))
            self.committed.extend(b.log.entries[len(self.committed):hw])
            self.verified[b.bid] = hw

    def _complete(self, b: Broker) -> None:
        done = b.purgatory.on_high_watermark(b.leader.high_watermark, len(b.leader.isr),
                                             b.leader.effective_min_isr)
        for c in done:
            self._answer_produce(b, c.token, c.error)

    def _alter_timeout(self, bid: int, req_id: int) -> None:
        b = self.brokers[bid]
        if b.alive and b.leader is not None and b.alter_req == req_id:
            b.alter_req = 0
            b.leader.on_alter_partition_failure(self.now)

    def on_alter_resp(self, msg: Msg) -> None:
        b = self.brokers[msg.dst]
        if b.leader is None or b.alter_req != msg.req_id:
            return
        b.alter_req = 0
        r = msg.body
        up = b.leader.on_alter_partition_response(r["error"], now_ms=self.now, leader_leo=b.log.log_end_offset,
                                                  leader_epoch=r["leader_epoch"], partition_epoch=r["pepoch"],
                                                  isr=r["isr"])
        self._after_leader_update(b, up)

    def on_fetch(self, msg: Msg) -> None:
        b = self.brokers[msg.dst]
        part = msg.body["Topics"][0]["Partitions"][0]
        resp = {"PartitionIndex": 0, "ErrorCode": 0, "HighWatermark": b.hw, "LogStartOffset": 0}
        epoch = part["CurrentLeaderEpoch"]
        if b.leader is None:
            resp["ErrorCode"] = (ErrorCode.NOT_LEADER_OR_FOLLOWER if epoch <= b.leader_epoch
                                 else ErrorCode.UNKNOWN_LEADER_EPOCH)
        elif epoch != b.leader.leader_epoch:
            resp["ErrorCode"] = (ErrorCode.FENCED_LEADER_EPOCH if epoch < b.leader.leader_epoch
                                 else ErrorCode.UNKNOWN_LEADER_EPOCH)
        else:
            self._serve_fetch(b, msg, part, resp)
        body = {"ErrorCode": 0, "Responses": [{"TopicId": TOPIC, "Partitions": [resp]}]}
        self.send(Msg("fetch_resp", b.bid, msg.src, body, msg.req_id))

    def _serve_fetch(self, b: Broker, msg: Msg, part: dict, resp: dict) -> None:
        log, offset = b.log, part["FetchOffset"]
        check = check_follower_fetch(offset, part["LastFetchedEpoch"], 0, log.log_end_offset,
                                     log.end_offset_for_epoch(part["LastFetchedEpoch"]))
        if check.error:
            resp["ErrorCode"] = check.error
            return
        if check.diverging:
            resp["DivergingEpoch"] = {"Epoch": check.diverging_epoch, "EndOffset": check.diverging_end_offset}
            return
        end = min(log.log_end_offset, offset + MAX_FETCH_RECORDS)
        resp["Records"] = [(o, *log.entries[o]) for o in range(offset, end)]
        up = b.leader.on_follower_fetch(msg.src, offset, now_ms=self.now, leader_leo=log.log_end_offset,
                                        broker_epoch=msg.body["ReplicaState"]["ReplicaEpoch"],
                                        local_log_start_timestamp=part["LocalLogStartTimestamp"],
                                        local_log_size_bytes=part["LocalLogSizeBytes"])
        self._after_leader_update(b, up)
        resp["HighWatermark"] = b.hw

    def on_produce(self, msg: Msg) -> None:
        b = self.brokers[msg.dst]
        value = msg.body["value"]
        if b.leader is None:
            return self._reply_produce(msg.src, msg.req_id, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, b.bid)
        err = b.purgatory.check_before_append(len(b.leader.isr), b.leader.effective_min_isr)
        if err:
            return self._reply_produce(msg.src, msg.req_id, err, -1, b.bid)
        offset = b.log.append(b.leader.leader_epoch, value)
        b.purgatory.add((msg.src, msg.req_id, offset, value), offset + 1, self.now, PRODUCE_TIMEOUT_MS)
        self._after_leader_update(b, b.leader.on_leader_append(b.log.log_end_offset, self.now))

    def _answer_produce(self, b: Broker, token, error: int) -> None:
        client, req_id, offset, _ = token
        self._reply_produce(client, req_id, error, offset, b.bid)

    def _reply_produce(self, client: int, req_id: int, error: int, offset: int, bid: int) -> None:
        self.send(Msg("produce_resp", bid, client, {"error": error, "offset": offset}, req_id))

    def broker_tick(self, bid: int) -> None:
        b = self.brokers[bid]
        if b.alive:
            if b.leader is not None:
                up = b.leader.tick(self.now, b.log.log_end_offset,
                                   LocalLog(b.log.local_log_start_timestamp, b.log.local_log_size_bytes))
                self._after_leader_update(b, up)
                for c in b.purgatory.expire(self.now):
                    self._answer_produce(b, c.token, c.error)
            self._fetch_soon(b)
            if self.rng.random() < 0.3:
                b.log.flushed = b.log.log_end_offset
        self.at(self.now + 10, self.broker_tick, bid)

    # --- broker: follower side -------------------------------------------------------------
    def _fetch_soon(self, b: Broker) -> None:
        self.at(self.now + FETCH_INTERVAL_MS, self._maybe_fetch, b.bid, b.broker_epoch)

    def _maybe_fetch(self, bid: int, broker_epoch: int) -> None:
        b = self.brokers[bid]
        if not b.alive or b.broker_epoch != broker_epoch:
            return
        for source, fetcher in list(b.fetchers.fetchers.items()):
            req = fetcher.build_fetch_request(self.now)
            if req is None:
                continue
            self.next_id += 1
            b.fetch_req[source] = self.next_id
            self.send(Msg("fetch", bid, source, req, self.next_id))
            self.at(self.now + FETCH_TIMEOUT_MS, self._fetch_timeout, bid, source, self.next_id)

    def _fetch_timeout(self, bid: int, source: int, req_id: int) -> None:
        b = self.brokers[bid]
        if b.alive and b.fetch_req.get(source) == req_id:
            del b.fetch_req[source]
            fetcher = b.fetchers.fetchers.get(source)
            if fetcher is not None:
                fetcher.handle_fetch_failure(self.now)

    def on_fetch_resp(self, msg: Msg) -> None:
        b = self.brokers[msg.dst]
        if b.fetch_req.get(msg.src) != msg.req_id:
            return
        del b.fetch_req[msg.src]
        fetcher = b.fetchers.fetchers.get(msg.src)
        if fetcher is None:
            return
        for action in fetcher.handle_fetch_response(msg.body, self.now):
            self._apply(b, action)
        self._fetch_soon(b)

    def _apply(self, b: Broker, action) -> None:
        log = b.log
        if isinstance(action, Append):
            for offset, epoch, value in action.records:
                assert offset == log.log_end_offset, (offset, log.log_end_offset)
                log.append(epoch, value)
        elif isinstance(action, TruncateTo):
            self._truncate(b, action.offset)
        elif isinstance(action, TruncateFullyAndStartAt):
            raise InvariantError(f"log start moved: {action}")
        elif isinstance(action, UpdateHighWatermark):
            b.hw = max(0, min(action.high_watermark, log.log_end_offset))

    def _truncate(self, b: Broker, offset: int) -> None:
        if offset >= b.log.log_end_offset:
            return
        self.stats["truncations"] += 1
        if b.bid in self.c_isr and offset < len(self.committed):
            raise InvariantError(f"ISR member {b.bid} truncates committed data to {offset} < {len(self.committed)}")
        b.log.truncate_to(offset)
        b.hw = min(b.hw, offset)
        self.verified[b.bid] = min(self.verified[b.bid], offset)

    # --- clients ---------------------------------------------------------------------------
    def produce_tick(self) -> None:
        if self.producing and self.c_leader != NO_LEADER:
            self.values += 1
            self.next_id += 1
            value = f"v{self.values}"
            self.pending_produce[self.next_id] = value
            self.send(Msg("produce", -1, self.c_leader, {"value": value}, self.next_id))
        self.at(self.now + self.rng.randint(2, 8), self.produce_tick)

    def on_produce_resp(self, msg: Msg) -> None:
        value = self.pending_produce.pop(msg.req_id, None)
        if value is None:
            return
        if msg.body["error"]:
            self.stats["produce_errors"] += 1
            self.errors[msg.body["error"]] = self.errors.get(msg.body["error"], 0) + 1
            return
        offset = msg.body["offset"]
        if offset >= len(self.committed) or self.committed[offset][1] != value:
            raise InvariantError(f"acked {value}@{offset} is not committed there")
        self.acked[value] = offset
        self.stats["acked"] += 1

    # --- faults ----------------------------------------------------------------------------
    def fault_tick(self) -> None:
        if not self.faults:
            return
        r = self.rng.random()
        down = [b for b in self.brokers.values() if not b.alive]
        if down and r < 0.5:
            self.restart(down[0].bid)
        elif not down and r < 0.25:
            self.crash(self.rng.choice(self.replicas), power_loss=self.rng.random() < 0.5)
        elif r < 0.3:
            self.move_leader()
        elif r < 0.35:
            self.delete_local(self.rng.choice(self.replicas))
        elif r < 0.55:
            a, c = self.rng.sample((0,) + self.all_brokers, 2)
            self.partitions.add(frozenset((a, c)))
        elif r < 0.8 and self.partitions:
            self.partitions.discard(self.rng.choice(sorted(self.partitions, key=sorted)))
        self.at(self.now + self.rng.randint(50, 250), self.fault_tick)

    def delete_local(self, bid: int) -> None:
        """Tiering deleted local segments: the earliest local record is recent, the local log smaller."""
        log = self.brokers[bid].log
        log.local_log_start_timestamp = self.now - self.rng.randint(0, ELIGIBLE_MS // 3)
        log.locally_deleted = self.rng.randint(log.locally_deleted, max(log.locally_deleted, log.log_end_offset))
        self.stats["local_deletions"] += 1

    def crash(self, bid: int, power_loss: bool) -> None:
        b = self.brokers[bid]
        all_in = len(self.c_isr) == len(self.replicas) and all(self.brokers[r].alive for r in self.replicas)
        power_loss = power_loss and all_in
        b.alive = False
        b.leader = b.purgatory = None
        b.fetch_req.clear()
        b.alter_req = 0
        self.stats["crashes"] += 1
        if power_loss:
            self.stats["power_losses"] += 1
            b.log.truncate_to(b.log.flushed)
            self.verified[bid] = min(self.verified[bid], b.log.log_end_offset)
        self.fence(bid)

    def restart(self, bid: int) -> None:
        b = self.brokers[bid]
        b.alive = True
        b.broker_epoch += 1
        b.leader_epoch, b.leader_id, b.hw = -1, NO_LEADER, 0
        b.fetchers = self._new_fetchers(b)
        self.meta_deliver_at[bid] = self.now
        self.unfence(bid)

    def heal(self) -> None:
        self.faults = False
        self.partitions.clear()
        for b in self.brokers.values():
            if not b.alive:
                self.restart(b.bid)

    # --- invariants ------------------------------------------------------------------------
    def _verify_prefix(self, bid: int, upto: int) -> None:
        log = self.brokers[bid].log
        start = self.verified[bid]
        if log.log_end_offset < upto:
            raise InvariantError(f"replica {bid} has {log.log_end_offset} records, {upto} are committed")
        if log.entries[start:upto] != self.committed[start:upto]:
            raise InvariantError(f"replica {bid} differs from the committed records in [{start}, {upto})")
        self.verified[bid] = max(start, upto)

    def check(self) -> None:
        n = len(self.committed)
        for bid in self.c_isr:
            if self.verified[bid] < n or self.brokers[bid].log.log_end_offset < n:
                self._verify_prefix(bid, n)

    # --- driver ----------------------------------------------------------------------------
    def run(self, fault_ms: int = 2500, heal_ms: int = 2500) -> None:
        for b in self.all_brokers:
            self.at(self.now + b, self.broker_tick, b)
        self.at(self.now + 30, self.produce_tick)
        self.at(self.now + 100, self.fault_tick)
        self.run_until(self.now + fault_ms)
        self.heal()
        self.run_until(self.now + heal_ms // 2)
        acked_before = self.stats["acked"]
        self.run_until(self.now + heal_ms // 2)
        self.producing = False
        self.run_until(self.now + 500)
        self.check_liveness(acked_before)

    def check_liveness(self, acked_before: int) -> None:
        leader = self.c_leader
        if leader == NO_LEADER:
            raise InvariantError("no leader after healing")
        if set(self.c_isr) != set(self.replicas):
            raise InvariantError(f"ISR {self.c_isr} after healing")
        if self.stats["acked"] <= acked_before:
            raise InvariantError("nothing acked after healing")
        lb = self.brokers[leader]
        if lb.leader is None or lb.hw != lb.log.log_end_offset:
            raise InvariantError(f"leader {leader} HW {lb.hw} != LEO {lb.log.log_end_offset}")
        for b in self.brokers.values():
            if b.log.entries != lb.log.entries:
                raise InvariantError(f"replica {b.bid} differs from leader {leader} after healing")
        for value, offset in self.acked.items():
            if lb.log.entries[offset][1] != value:
                raise InvariantError(f"acked {value}@{offset} lost")
