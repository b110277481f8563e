"""The replica fetcher core for one source broker (Kafka's ReplicaFetcherThread, sans IO).

A ``FetcherState`` multiplexes every partition this broker follows from one
leader into one Fetch request at a time: ``build_fetch_request`` returns the
request dict (Fetch v19: ReplicaState{ReplicaId, ReplicaEpoch}, topic ids,
CurrentLeaderEpoch, FetchOffset, LastFetchedEpoch, LogStartOffset,
PartitionMaxBytes and the KIP-1303 LocalLogStartTimestamp / LocalLogSizeBytes)
or None; the shell sends it and hands the answer to ``handle_fetch_response``
(or reports ``handle_fetch_failure``), which returns actions to apply.

Fetch sessions are not used (SessionId 0, SessionEpoch -1: full fetches).
The shell hands over only the answer of the request in flight: after
``handle_fetch_failure`` (timeout) it closes the connection, so a late answer
is never taken for the next request's.

Per-partition answers (Kafka's AbstractFetcherThread.processFetchRequest):

- NONE with DivergingEpoch: TruncateTo(``divergence.truncation_offset``), then
  fetch again from the new end with the new last epoch;
- NONE: Append (when there are records), UpdateHighWatermark;
- OFFSET_OUT_OF_RANGE: ListLeaderOffset(LATEST);
  the shell asks the leader with ListOffsets as a replica and hands the answer
  to ``on_leader_offset``, which applies Kafka's fetchOffsetAndTruncate rule:

  1. leader log end (LATEST asked with our ReplicaId: the leader's log end
     offset, not its high watermark) < our log end: TruncateTo(leader end);
  2. else ask EARLIEST (the leader's log start); leader start > our log end:
     TruncateFullyAndStartAt(leader start) (we were down while it deleted
     segments);
  3. else fetch again from our log end (= max(leader start, our end)).

  A ListOffsets error backs the partition off (it is fetched again and the
  resolution starts over), FENCED_LEADER_EPOCH waits for metadata like a
  fenced fetch.
- OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405, the leader has the offset only in
  remote storage): BuildRemoteLogAuxState; the shell rebuilds the log from
  remote storage so that it starts at the leader's local log start and reports
  back through ``on_remote_aux_state`` (success: fetch from the new log end;
  failure: back off and fetch again, which asks again).
- KIP-1023 (``tiered_start``): an empty replica of a tiered, non-compacted
  topic with ``follower.fetch.last.tiered.offset.enable`` on is not fetched
  before the leader was asked where it starts: ``take_probes`` returns a
  ProbeTieredStart per such partition (BEFORE its first fetch, which closes
  Kafka's gap: see ``tiered_start``), and OFFSET_OUT_OF_RANGE /
  OFFSET_MOVED_TO_TIERED_STORAGE on such a replica probe too (Kafka's trigger).
  The shell hands the leader's offsets to ``on_tiered_start``: fetch as usual,
  TruncateFullyAndStartAt(T), BuildRemoteLogAuxState(T, log start), or back
  off and probe again.
- FENCED_LEADER_EPOCH: our epoch is old; AwaitMetadata, not fetched until
  ``set_leader_epoch`` brings a newer one (Kafka removes the partition);
- anything else (NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH,
  UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, KAFKA_STORAGE_ERROR, ...):
  Backoff, then retry.

A partition answer is used only if the partition is still in flight at the
same leader epoch and its log end is still the offset we asked for;
otherwise it is stale and ignored.  A top-level error or a lost request backs
off every partition that was in flight.
"""
from __future__ import annotations

from dataclasses import dataclass

from tierlog.protocol.errors import ErrorCode

from .backoff import ExponentialBackoff
from .divergence import truncation_offset
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
from .follower import (
    FETCH_BACKOFF_MAX_MS,
    FetchStatus,
    FollowerLog,
    PartitionFetchState,
)
from .tiered_start import (
    NOT_TIERED,
    LeaderOffsets,
    StartKind,
    TopicTiering,
    decide,
    should_probe,
)

__all__ = ["FETCH_VERSION", "FetcherConfig", "FetcherState"]

FETCH_VERSION = 19          # KIP-1303's local-log fields (protocol/messages/fetch.py)



@dataclass(frozen=True, slots=True)
class FetcherConfig:
    max_wait_ms: int = 500                     # replica.fetch.wait.max.ms
    min_bytes: int = 1                         # replica.fetch.min.bytes
    max_bytes: int = 10 * 1024 * 1024          # replica.fetch.response.max.bytes
    partition_max_bytes: int = 1024 * 1024     # replica.fetch.max.bytes
    backoff_ms: int = 1000                     # replica.fetch.backoff.ms
    backoff_max_ms: int = FETCH_BACKOFF_MAX_MS

    @property
    def backoff(self) -> ExponentialBackoff:
        return ExponentialBackoff(self.backoff_ms, max(self.backoff_ms, self.backoff_max_ms))


class FetcherState:
    def __init__(self, source_broker_id: int, replica_id: int, replica_epoch: int = -1,
                 config: FetcherConfig = FetcherConfig()) -> None:
        self.source_broker_id = source_broker_id
        self.replica_id = replica_id
        self.replica_epoch = replica_epoch
        self.config = config
        self._backoff = config.backoff
        self.partitions: dict[PartitionKey, PartitionFetchState] = {}
        self.in_flight = False
        self.last_tiered_offset_enable = False     # follower.fetch.last.tiered.offset.enable (KIP-1023)

    # --- membership (driven by metadata) ---------------------------------------------------
    def add_partition(self, key: PartitionKey, leader_epoch: int, log: FollowerLog,
                      tiering: TopicTiering = NOT_TIERED) -> None:
        assert key not in self.partitions, key
        self.partitions[key] = PartitionFetchState(key, log, self.source_broker_id, leader_epoch, tiering=tiering)

    def set_tiering(self, key: PartitionKey, tiering: TopicTiering) -> None:
        """The topic's tiering traits changed (topic configs come with the metadata image)."""
        self.partitions[key].tiering = tiering

    def set_leader_epoch(self, key: PartitionKey, leader_epoch: int) -> None:
        """A newer leader epoch with the same leader: fetch again from scratch."""
        p = self.partitions[key]
        assert leader_epoch >= p.leader_epoch, (leader_epoch, p.leader_epoch)
        if leader_epoch == p.leader_epoch:
            return
        self.partitions[key] = PartitionFetchState(key, p.log, self.source_broker_id, leader_epoch,
                                                   tiering=p.tiering)

    def remove_partition(self, key: PartitionKey) -> PartitionFetchState | None:
        return self.partitions.pop(key, None)

    # --- requests ----------------------------------------------------------------------------
    def build_fetch_request(self, now_ms: int) -> dict | None:
        """The next Fetch (v19 field names) for partitions ready now, or None."""
        if self.in_flight:
            return None
        ready = [p for p in self.partitions.values() if p.ready(now_ms) and not self._probe_due(p)]
        if not ready:
            return None
        topics: dict[bytes, list[dict]] = {}
        for p in ready:
            topics.setdefault(p.key[0], []).append(p.fetch_partition(self.config.partition_max_bytes))
        self.in_flight = True
        c = self.config
        return {"ReplicaState": {"ReplicaId": self.replica_id, "ReplicaEpoch": self.replica_epoch},
                "MaxWaitMs": c.max_wait_ms, "MinBytes": c.min_bytes, "MaxBytes": c.max_bytes,
                "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
                "Topics": [{"TopicId": tid, "Partitions": parts} for tid, parts in topics.items()],
                "ForgottenTopicsData": [], "RackId": ""}

    def take_probes(self, now_ms: int) -> list[ProbeTieredStart]:
        """KIP-1023: the partitions to ask the leader about before their first fetch (now PROBING)."""
        probes = []
        for p in self.partitions.values():
            if p.ready(now_ms) and self._probe_due(p):
                p.move(FetchStatus.PROBING)
                p.probe_trigger = ErrorCode.NONE
                probes.append(ProbeTieredStart(p.key, p.leader_epoch))
        return probes

    def _tiering(self, p: PartitionFetchState) -> TopicTiering:
        return TopicTiering(self.last_tiered_offset_enable, p.tiering.tiered, p.tiering.compacted)

    def _probe_due(self, p: PartitionFetchState) -> bool:
        return not p.probed and should_probe(self._tiering(p), p.log.log_end_offset)

    def next_wakeup_ms(self) -> int | None:
        """When a delayed partition becomes ready (None if none is delayed)."""
        times = [p.delay_until_ms for p in self.partitions.values() if p.status is FetchStatus.FETCHING]
        return min(times) if times else None

    # --- responses ---------------------------------------------------------------------------
    def handle_fetch_failure(self, now_ms: int, error: int = ErrorCode.REQUEST_TIMED_OUT) -> list[FetchAction]:
        """The request got no answer (connection lost, timeout)."""
        self.in_flight = False
        return [self._back_off(p, now_ms, error) for p in self.partitions.values()
                if p.status is FetchStatus.IN_FLIGHT]

    def handle_fetch_response(self, response: dict, now_ms: int) -> list[FetchAction]:
        self.in_flight = False
        top = response.get("ErrorCode", ErrorCode.NONE)
        if top:
            return self.handle_fetch_failure(now_ms, top)
        actions: list[FetchAction] = []
        answered: set[PartitionKey] = set()
        for topic in response.get("Responses", ()):
            for data in topic["Partitions"]:
                key = (topic["TopicId"], data["PartitionIndex"])
                p = self.partitions.get(key)
                if p is None or p.status is not FetchStatus.IN_FLIGHT or key in answered:
                    continue
                answered.add(key)
                actions.extend(self._handle_partition(p, data, now_ms))
        for p in self.partitions.values():          # asked but not answered: ask again
            if p.status is FetchStatus.IN_FLIGHT and p.key not in answered:
                p.move(FetchStatus.FETCHING)
        return actions

    def _handle_partition(self, p: PartitionFetchState, data: dict, now_ms: int) -> list[FetchAction]:
        error = data.get("ErrorCode", ErrorCode.NONE)
        if error == ErrorCode.NONE and p.log.log_end_offset != p.inflight_offset:
            p.move(FetchStatus.FETCHING)            # our log changed meanwhile: stale answer
            return []
        if error == ErrorCode.NONE:
            p.move(FetchStatus.FETCHING)
            p.errors, p.delay_until_ms = 0, 0
            return self._handle_data(p, data)
        if error in (ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE, ErrorCode.OFFSET_OUT_OF_RANGE) and \
                should_probe(self._tiering(p), p.log.log_end_offset):
            # KIP-1023 "ReplicaFetcher Changes": on either error an empty follower asks where to start
            p.move(FetchStatus.PROBING)
            p.probed, p.probe_trigger = False, error
            return [ProbeTieredStart(p.key, p.leader_epoch)]
        if error == ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE:
            p.move(FetchStatus.TIERED)
            return [BuildRemoteLogAuxState(p.key, p.leader_epoch)]
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            p.move(FetchStatus.OUT_OF_RANGE)
            return [ListLeaderOffset(p.key, p.leader_epoch, LATEST)]
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            p.move(FetchStatus.FENCED)
            return [AwaitMetadata(p.key, p.leader_epoch, error)]
        return [self._back_off(p, now_ms, error)]

    def _handle_data(self, p: PartitionFetchState, data: dict) -> list[FetchAction]:
        diverging = data.get("DivergingEpoch") or {}
        epoch, end = diverging.get("Epoch", -1), diverging.get("EndOffset", -1)
        if epoch >= 0 and end >= 0:
            local = p.log.end_offset_for_epoch(epoch)
            return [TruncateTo(p.key, truncation_offset(epoch, end, local, p.log.log_end_offset))]
        actions: list[FetchAction] = []
        records = data.get("Records")
        if records is not None and len(records) > 0:
            actions.append(Append(p.key, records))
        actions.append(UpdateHighWatermark(p.key, data.get("HighWatermark", -1), data.get("LogStartOffset", -1)))
        return actions

    def _back_off(self, p: PartitionFetchState, now_ms: int, error: int) -> Backoff:
        p.move(FetchStatus.FETCHING)
        p.errors += 1
        p.delay_until_ms = now_ms + self._backoff.delay_ms(p.errors)
        return Backoff(p.key, p.delay_until_ms, int(error))

    # --- OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405's follower path) -------------------------
    def on_remote_aux_state(self, key: PartitionKey, leader_epoch: int, error: int, now_ms: int) -> list[FetchAction]:
        """The shell's report on a ``BuildRemoteLogAuxState``: NONE when the log now starts at the
        leader's local log start, else the error (retriable: back off, the next fetch asks again)."""
        p = self.partitions.get(key)
        if p is None or p.status is not FetchStatus.TIERED or p.leader_epoch != leader_epoch:
            return []
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            p.move(FetchStatus.FENCED)
            return [AwaitMetadata(key, leader_epoch, error)]
        if error:
            p.probed = False            # a failed KIP-1023 rebuild asks the leader again after the backoff
            return [self._back_off(p, now_ms, error)]
        p.move(FetchStatus.FETCHING)
        p.probed = True
        p.errors, p.delay_until_ms = 0, 0
        return []

    # --- KIP-1023: where an empty replica of a tiered topic starts -----------------------
    def on_tiered_start(self, key: PartitionKey, leader_epoch: int, error: int, leader: LeaderOffsets | None,
                        now_ms: int) -> list[FetchAction]:
        """The leader's answers to a ``ProbeTieredStart`` (``error`` of the first failed ListOffsets)."""
        p = self.partitions.get(key)
        if p is None or p.status is not FetchStatus.PROBING or p.leader_epoch != leader_epoch:
            return []
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            p.move(FetchStatus.FENCED)
            return [AwaitMetadata(key, leader_epoch, error)]
        if error or leader is None:
            return [self._back_off(p, now_ms, error or ErrorCode.UNKNOWN_SERVER_ERROR)]
        start = decide(self._tiering(p), p.log.log_end_offset, leader)
        if start.kind is StartKind.RETRY:        # KIP-1023: "the partition can be retried after some time"
            return [self._back_off(p, now_ms, ErrorCode.OFFSET_NOT_AVAILABLE)]
        if start.kind is StartKind.REBUILD_AT:
            p.move(FetchStatus.TIERED)
            return [BuildRemoteLogAuxState(key, leader_epoch, start.offset, start.log_start)]
        if start.kind is StartKind.USUAL and p.probe_trigger:
            # KIP-1023 "If the check fails, continue with the old behaviour" for the error that fired
            p.probed = True
            if p.probe_trigger == ErrorCode.OFFSET_OUT_OF_RANGE:
                p.move(FetchStatus.OUT_OF_RANGE)
                return [ListLeaderOffset(key, leader_epoch, LATEST)]
            p.move(FetchStatus.TIERED)
            return [BuildRemoteLogAuxState(key, leader_epoch)]
        p.move(FetchStatus.FETCHING)
        p.probed = True
        p.errors, p.delay_until_ms = 0, 0
        if start.kind is StartKind.START_AT:
            return [TruncateFullyAndStartAt(key, start.offset)]
        return []

    # --- OFFSET_OUT_OF_RANGE resolution (Kafka's fetchOffsetAndTruncate) -------------------
    def on_leader_offset(self, key: PartitionKey, leader_epoch: int, timestamp: int, error: int, offset: int,
                         now_ms: int) -> list[FetchAction]:
        """The leader's ListOffsets answer (``error``, ``offset``) to a ``ListLeaderOffset``.

        Ignored unless the partition is still resolving at ``leader_epoch``.
        """
        p = self.partitions.get(key)
        if p is None or p.status is not FetchStatus.OUT_OF_RANGE or p.leader_epoch != leader_epoch:
            return []
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            p.move(FetchStatus.FENCED)
            return [AwaitMetadata(key, leader_epoch, error)]
        if error or offset < 0:
            return [self._back_off(p, now_ms, error or ErrorCode.UNKNOWN_SERVER_ERROR)]
        local_end = p.log.log_end_offset
        if timestamp == LATEST:
            if offset < local_end:
                p.move(FetchStatus.FETCHING)
                return [TruncateTo(key, offset)]
            return [ListLeaderOffset(key, leader_epoch, EARLIEST)]
        assert timestamp == EARLIEST, timestamp
        p.move(FetchStatus.FETCHING)
        if offset > local_end:
            return [TruncateFullyAndStartAt(key, offset)]
        return []
