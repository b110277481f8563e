"""The replica fetcher core for one source broker (Kafka's ReplicaFetcherThread, sans IO).

A ``FetcherState`` multiplexes every partition this broker follows from one
leader into one Fetch request at a time: ``build_fetch_request`` returns the
request dict (Fetch v19: ReplicaState{ReplicaId, ReplicaEpoch}, topic ids,
CurrentLeaderEpoch, FetchOffset, LastFetchedEpoch, LogStartOffset,
PartitionMaxBytes and the KIP-1303 LocalLogStartTimestamp / LocalLogSizeBytes)
or None; the shell sends it and hands the answer to ``handle_fetch_response``
(or reports ``handle_fetch_failure``), which returns actions to apply.

Fetch sessions (KIP-227, ``follower_session``): the first request lists every
fetchable partition; once the leader has a session, a request names only the
partitions whose fetch fields changed (``_dirty``: an append, a truncation, a
new epoch, a state change, a backoff that ended) and forgets the ones that
stopped being fetchable, and the leader answers only partitions with news, so
a round costs in proportion to what changed.  A partition is fetched while it
is FETCHING and not delayed; delays end through a heap of wake-up times, not
a scan.  The KIP-1303 local-log fields also change without an append (local
retention); every ``LOCAL_LOG_REFRESH_MS`` each member is compared again.
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

A partition answer is used only if the partition is still FETCHING in the
session at the leader epoch and log end offset it was last sent with;
otherwise it is stale and ignored.  A top-level error or a lost request backs
off every partition of the session (and the next request is a full one);
FETCH_SESSION_ID_NOT_FOUND and INVALID_FETCH_SESSION_EPOCH only restart the
session.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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
from .follower_session import FetchFields, FollowerSession
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
LOCAL_LOG_REFRESH_MS = 5_000    # how often every member's KIP-1303 fields are compared again
_SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH)


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
        self.session = FollowerSession()
        self._dirty: set[PartitionKey] = set()          # fetch fields or fetchability may have changed
        self._wakeups: list[tuple[int, PartitionKey]] = []   # (delay_until_ms, key) heap
        self._last_refresh_ms = 0
        self._last_tiered_offset_enable = False

    @property
    def last_tiered_offset_enable(self) -> bool:
        """follower.fetch.last.tiered.offset.enable (KIP-1023)."""
        return self._last_tiered_offset_enable

    def update_last_tiered_offset_enable(self, value: bool) -> None:
        """The config changed (a dynamic config): the partitions choose where to start again."""
        if value != self._last_tiered_offset_enable:
            self._last_tiered_offset_enable = value
            self._dirty.update(self.partitions)         # which partitions probe first changed

    # --- membership (driven by metadata) ---------------------------------------------------
    def add_partition(self, key: PartitionKey, leader_epoch: int, log: FollowerLog,
                      tiering: TopicTiering = NOT_TIERED) -> None:
        assert key not in self.partitions, key
        self.partitions[key] = PartitionFetchState(key, log, self.source_broker_id, leader_epoch, tiering=tiering)
        self._dirty.add(key)

    def set_tiering(self, key: PartitionKey, tiering: TopicTiering) -> None:
        """The topic's tiering traits changed (topic configs come with the metadata image)."""
        self.partitions[key].tiering = tiering
        self._dirty.add(key)

    def set_leader_epoch(self, key: PartitionKey, leader_epoch: int) -> None:
        """A newer leader epoch with the same leader: fetch again from scratch."""
        p = self.partitions[key]
        assert leader_epoch >= p.leader_epoch, (leader_epoch, p.leader_epoch)
        if leader_epoch == p.leader_epoch:
            return
        self.partitions[key] = PartitionFetchState(key, p.log, self.source_broker_id, leader_epoch,
                                                   tiering=p.tiering)
        self._dirty.add(key)

    def remove_partition(self, key: PartitionKey) -> PartitionFetchState | None:
        self._dirty.add(key)
        return self.partitions.pop(key, None)

    def mark_changed(self, keys: Iterable[PartitionKey]) -> None:
        """The shell changed these logs outside a fetch answer (e.g. a KIP-405 rebuild)."""
        self._dirty.update(keys)

    # --- requests ----------------------------------------------------------------------------
    def build_fetch_request(self, now_ms: int) -> dict[str, Any] | None:
        """The next Fetch (v19 field names), or None when nothing is fetchable now."""
        if self.in_flight:
            return None
        self._wake_delayed(now_ms)
        if now_ms - self._last_refresh_ms >= LOCAL_LOG_REFRESH_MS:
            self._last_refresh_ms = now_ms
            self._dirty.update(self.session.members)
        session_id, epoch = self.session.begin_request()
        candidates = self.partitions if self.session.full else self._dirty
        changed, forgotten, probe_due = self._diff(candidates, now_ms)
        self._dirty = probe_due             # ``take_probes`` takes them
        if not self.session.members:
            self.session.reset()
            return None
        self.in_flight = True
        c = self.config
        return {"ReplicaState": {"ReplicaId": self.replica_id, "ReplicaEpoch": self.replica_epoch},
                "MaxWaitMs": c.max_wait_ms, "MinBytes": c.min_bytes, "MaxBytes": c.max_bytes,
                "IsolationLevel": 0, "SessionId": session_id, "SessionEpoch": epoch,
                "Topics": _by_topic(changed), "ForgottenTopicsData": _by_topic(forgotten), "RackId": ""}

    def _diff(self, candidates: Iterable[PartitionKey], now_ms: int) -> tuple[
            list[tuple[PartitionKey, dict[str, Any]]], list[tuple[PartitionKey, int]], set[PartitionKey]]:
        """([(key, entry)] to send, [(key, index)] to forget, {keys whose KIP-1023 probe is due}) among
        ``candidates``; updates the members."""
        members = self.session.members
        changed: list[tuple[PartitionKey, dict[str, Any]]] = []
        forgotten: list[tuple[PartitionKey, int]] = []
        probe_due: set[PartitionKey] = set()
        max_bytes = self.config.partition_max_bytes
        for key in candidates:
            p = self.partitions.get(key)
            if p is not None and p.ready(now_ms):
                if not (p.tiering.tiered and self._probe_due(p)):       # only a tiered topic's probes
                    fields = p.fields(max_bytes)
                    if members.get(key) != fields:
                        members[key] = fields
                        changed.append((key, fields.request_entry(key[1])))
                    continue
                probe_due.add(key)
            if members.pop(key, None) is not None:      # gone, delayed or probing: not fetched
                forgotten.append((key, key[1]))
        return changed, forgotten, probe_due

    def take_probes(self, now_ms: int) -> list[ProbeTieredStart]:
        """KIP-1023: the partitions to ask the leader about before their first fetch (now PROBING)."""
        self._wake_delayed(now_ms)
        candidates = self.partitions if self.session.full else self._dirty
        probes = []
        for key in candidates:
            p = self.partitions.get(key)
            if p is not None and p.tiering.tiered and p.ready(now_ms) and self._probe_due(p):
                probes.append(p)        # (only a tiered topic's partition is ever probed)
        for p in probes:
            p.move(FetchStatus.PROBING)
            p.probe_trigger = ErrorCode.NONE
            self._dirty.add(p.key)
        return [ProbeTieredStart(p.key, p.leader_epoch) for p in probes]

    def _tiering(self, p: PartitionFetchState) -> TopicTiering:
        return TopicTiering(self.last_tiered_offset_enable, p.tiering.tiered, p.tiering.compacted)

    def _probe_due(self, p: PartitionFetchState) -> bool:
        return not p.probed and p.tiering.tiered and should_probe(self._tiering(p), p.log.log_end_offset)

    def _wake_delayed(self, now_ms: int) -> None:
        """Partitions whose backoff ended become candidates again."""
        while self._wakeups and self._wakeups[0][0] <= now_ms:
            self._dirty.add(heapq.heappop(self._wakeups)[1])

    def next_wakeup_ms(self) -> int | None:
        """When a delayed partition becomes ready (None if none is delayed)."""
        while self._wakeups:
            until, key = self._wakeups[0]
            p = self.partitions.get(key)
            if p is not None and p.status is FetchStatus.FETCHING and p.delay_until_ms == until:
                return until
            heapq.heappop(self._wakeups)
        return None

    # --- responses ---------------------------------------------------------------------------
    def handle_fetch_failure(self, now_ms: int, error: int = ErrorCode.REQUEST_TIMED_OUT) -> list[FetchAction]:
        """The request got no answer (connection lost, timeout) or a top-level error."""
        self.in_flight = False
        self.session.on_error(error)
        if error in _SESSION_ERRORS:
            return []                   # only the session is gone: the next (full) request fetches
        return [self._back_off(self.partitions[key], now_ms, error) for key in self.session.members
                if key in self.partitions and self.partitions[key].status is FetchStatus.FETCHING]

    def handle_fetch_response(self, response: dict[str, Any], now_ms: int) -> list[FetchAction]:
        top = response.get("ErrorCode", ErrorCode.NONE)
        if top:
            return self.handle_fetch_failure(now_ms, top)
        self.in_flight = False
        members = self.session.members
        self.session.on_response(response.get("SessionId", 0))
        actions: list[FetchAction] = []
        partitions, dirty, fetching = self.partitions, self._dirty, FetchStatus.FETCHING
        for topic in response.get("Responses", ()):
            topic_id = topic["TopicId"]
            for data in topic["Partitions"]:
                key = (topic_id, data["PartitionIndex"])
                p, sent = partitions.get(key), members.get(key)
                if p is None or sent is None or p.status is not fetching:
                    continue
                diverging = data.get("DivergingEpoch")
                if data.get("ErrorCode") or (diverging and diverging.get("Epoch", -1) >= 0):
                    dirty.add(key)              # an error or a divergence: never watermarks only
                    if sent.current_leader_epoch == p.leader_epoch:     # else asked at an older epoch
                        actions.extend(self._handle_partition(p, sent, data, now_ms))
                    continue
                # most answers, inline (``_handle_data``'s): records and/or the high watermark.  One
                # that moves only the high watermark leaves the partition's next request entry as the
                # leader has it (the log end, its epoch and log start stay): not dirty.  Half the
                # answers of partitions with records spread thin are these (the leader's high
                # watermark moves after the follower's next fetch)
                log = p.log
                records = data.get("Records")
                if records is not None and len(records) > 0:
                    dirty.add(key)
                elif data.get("LogStartOffset", -1) > log.log_start_offset:
                    dirty.add(key)              # the leader raised the log start: compare again
                    records = None
                else:
                    records = None
                if sent.current_leader_epoch != p.leader_epoch or log.log_end_offset != sent.fetch_offset:
                    continue                    # asked at an older epoch, or our log changed meanwhile
                p.errors = p.delay_until_ms = 0
                if records is not None:
                    actions.append(Append(key, records))
                actions.append(UpdateHighWatermark(key, data.get("HighWatermark", -1), data.get("LogStartOffset", -1)))
        return actions

    def _handle_partition(self, p: PartitionFetchState, sent: FetchFields, data: dict[str, Any],
                          now_ms: int) -> list[FetchAction]:
        error = data.get("ErrorCode", ErrorCode.NONE)
        if error == ErrorCode.NONE and p.log.log_end_offset != sent.fetch_offset:
            return []                               # our log changed meanwhile: stale answer
        if error == ErrorCode.NONE:
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

    def _handle_data(self, p: PartitionFetchState, data: dict[str, Any]) -> list[FetchAction]:
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
        heapq.heappush(self._wakeups, (p.delay_until_ms, p.key))
        self._dirty.add(p.key)          # forgotten by the next request, back when the delay ends
        return Backoff(p.key, p.delay_until_ms, int(error))

    # --- OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405's follower path) -------------------------
    def on_remote_aux_state(self, key: PartitionKey, leader_epoch: int, error: int, now_ms: int) -> list[FetchAction]:
        """The shell's report on a ``BuildRemoteLogAuxState``: NONE when the log now starts at the
        leader's local log start, else the error (retriable: back off, the next fetch asks again)."""
        self._dirty.add(key)
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
        self._dirty.add(key)
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
        self._dirty.add(key)
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


def _by_topic(entries: Iterable[tuple[PartitionKey, object]]) -> list[dict[str, Any]]:
    """Request entries grouped per topic id: [{"TopicId": id, "Partitions": [...]}]."""
    topics: dict[bytes, list[object]] = {}
    for key, entry in entries:
        topics.setdefault(key[0], []).append(entry)
    return [{"TopicId": tid, "Partitions": parts} for tid, parts in topics.items()]
