"""Fetch (1), v4-19: read whole batches from file ranges, long-poll, fetch sessions.

- Topic names up to v12, topic ids from v13 (unknown id -> UNKNOWN_TOPIC_ID).
- Fetch sessions (KIP-227, v7+) through ``FetchSessionCache``: an incremental
  fetch reads only the partitions it names and those marked changed since
  (appends, high watermark or log start moves, leadership lost), and its
  response carries only partitions with news; a parked one wakes when a
  partition of its session changes.
- Long poll: when fewer than MinBytes are ready, wait up to MaxWaitMs (capped
  by ``request.timeout.ms``) for an append to any fetched partition. A
  follower's fetch that omits a partition which just moved here is answered at
  once, and a parked one wakes when such a move happens or when this broker
  stops leading one of its partitions (``replication.leader_moves``).
- Limits: PartitionMaxBytes per partition and MaxBytes (capped by the broker's
  ``fetch.max.bytes``) per response; the first partition with data returns at
  least one whole batch even when larger (Kafka's "min one message").
- Consumers read up to the high watermark (READ_UNCOMMITTED) or the last stable
  offset (READ_COMMITTED); replicas (ReplicaId >= 0) up to the log end
  (``Partition.read`` by ``FetchIsolation``); a READ_COMMITTED answer lists the
  aborted transactions overlapping what it reads (AbortedTransactions, from the
  log's ``.txnindex``; KIP-98), which the consumer skips; read from remote
  storage, from the uploaded ``.txnindex`` objects (``broker.remote.reader``).
- LastFetchedEpoch (v12+) is checked against the leader epoch cache and a
  mismatch answered with DivergingEpoch (KIP-595 / KIP-320).
- v12+ errors carry KIP-951's CurrentLeader; v16 adds NodeEndpoints. Before
  answering NOT_LEADER_OR_FOLLOWER / UNKNOWN_LEADER_EPOCH / an unknown topic,
  the broker catches up with the quorum once (``stale_metadata``).
- A follower's fetch (ReplicaId >= 0) on the leader updates the leader's view
  of that follower (``ReplicaManager.on_follower_fetch``: ISR, high watermark)
  with the FetchOffset, ReplicaEpoch and the v19 KIP-1303 LocalLogStartTimestamp
  / LocalLogSizeBytes of each partition it reads (a session partition the
  request does not name: as last named); a diverging or out-of-range fetch
  does not.  ``ReplicaManager.on_replica_fetch`` records when each follower
  last fetched, for the partitions no fetch reads because nothing changed.
- Tiered logs (KIP-405): a consumer's fetch below the local log start is served
  from remote storage (``broker.remote.reader``), every such partition at once,
  each waiting at most remote.fetch.max.wait.ms (then it comes back empty); no
  long poll when one was asked; a follower's gets OFFSET_MOVED_TO_TIERED_STORAGE.
- ACLs: a follower needs CLUSTER_ACTION on the cluster, a consumer READ on each topic
  (else TOPIC_AUTHORIZATION_FAILED for its partitions; ``authz``).
Records are file regions (the transport sends them with os.sendfile), or bytes
read from remote storage.  The request becomes a typed ``FetchParams`` first
(``fetch_params``; per partition a ``SessionPartition``): no request dict goes further.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader
from tierlog.tiered.read_rules import FetchSource, fetch_source

from ..fetch_params import TOPIC_IDS_FROM, FetchParams
from ..fetch_session import FetchSessionError, SessionPartition
from ..leader_hint import HINTED_ERRORS, LeaderHints
from . import authz
from .context import HandlerContext
from .stale_metadata import catch_up_once, may_be_stale

if TYPE_CHECKING:
    from tierlog.protocol.typed.fetch import (
        FetchableTopicResponse,
        FetchPartitionData,
        FetchRequest,
        FetchResponse,
    )

READ_COMMITTED = 1

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.FETCH, 4, 19


async def handle(broker: HandlerContext, header: RequestHeader, request: FetchRequest) -> FetchResponse:
    params = fetch_params(request, header.api_version, broker.fetch_max_bytes, broker.fetch_wait_max_ms)
    try:
        view = broker.fetch_sessions.open(params.session_id, params.session_epoch, params.partitions,
                                          params.forgotten, replica=params.from_follower)
    except FetchSessionError as e:
        return {"ThrottleTimeMs": 0, "ErrorCode": e.error_code, "SessionId": 0, "Responses": []}
    if params.from_follower:
        broker.replicas.on_replica_fetch(params.replica_id)
    may_read = _may_read(broker, header, params.replica_id)
    reads = _read_all(broker, view.partitions, params, may_read, view.session_id)
    if any(may_be_stale(r.key and broker.replicas.get(*r.key), r.error) for r in reads if r.error):
        await catch_up_once(broker)
        reads = _read_all(broker, view.partitions, params, may_read, view.session_id)
    if any(r.remote for r in reads):
        await _read_remote(broker, reads, params.max_bytes)
    elif params.max_wait_ms > 0 and not _satisfied(reads, params.min_bytes) and not _moved_here(broker, params, view):
        keys = [r.key for r in reads if r.key is not None]
        await broker.fetch_purgatory.wait(keys, params.max_wait_ms / 1000, params.replica_id, view)
        reads = _after_wait(broker, view, reads, params, may_read)
    for r in reads:
        if r.size > 0 or r.more:
            view.keep(r.sp)         # read again next time, named or not (applied, or the budget ran out)
    return _response(broker, view, reads, params.version, header.listener)


def fetch_params(request: FetchRequest, version: int, fetch_max_bytes: int, fetch_wait_max_ms: int) -> FetchParams:
    """The request as typed parameters (a follower's partitions also with their log start and
    KIP-1303 local log), the broker's caps applied: no request dict travels further."""
    replica_state = (request.get("ReplicaState") or {}) if version >= 15 else {}
    replica_id = replica_state.get("ReplicaId", -1) if version >= 15 else request.get("ReplicaId", -1)
    params = FetchParams(version, replica_id, replica_state.get("ReplicaEpoch", -1),
                         min(request["MaxWaitMs"], fetch_wait_max_ms), request["MinBytes"],
                         min(request.get("MaxBytes", fetch_max_bytes), fetch_max_bytes),
                         request.get("IsolationLevel", 0), request.get("SessionId", 0), request.get("SessionEpoch", -1))
    by_id, follower = params.by_topic_id, params.from_follower
    for t in request["Topics"]:
        topic_key = t["TopicId"] if by_id else t["Topic"]
        for p in t["Partitions"]:
            sp = SessionPartition(topic_key, p["Partition"], p["FetchOffset"], p["PartitionMaxBytes"],
                                  p.get("CurrentLeaderEpoch", -1), p.get("LastFetchedEpoch", -1))
            if follower:
                sp.log_start_offset = p.get("LogStartOffset", -1)
                sp.local_log_start_timestamp = p.get("LocalLogStartTimestamp", -1)
                sp.local_log_size_bytes = p.get("LocalLogSizeBytes", -1)
            params.partitions.append(sp)
    params.forgotten = [(t["TopicId"] if by_id else t["Topic"], p)
                        for t in request.get("ForgottenTopicsData", ()) for p in t["Partitions"]]
    return params


def _after_wait(broker, view, reads, params: FetchParams, may_read):
    """The reads of a parked fetch once woken. In a session (which marks every append, watermark
    move and lost leadership), a partition read empty and not marked since stands as read then
    while this broker still leads it at the fetch's epoch; a marked one with nothing new to read
    gets its watermarks again; the rest, the newly marked, and every partition of a sessionless
    fetch are read again. The follower's state of a partition marked while parked is updated
    now (the first pass did the others): an ISR expand may wait on exactly that."""
    first = {id(r.sp): r for r in reads}
    marked = {id(sp): sp for sp in view.take_changed()}
    tracked = view.tracks_changes()
    kept, again = [], []
    for key, r in first.items():
        empty = not (r.size or r.more or r.error or r.diverging or r.remote)
        if empty and tracked and _still_led(broker, r) and (key not in marked or _refreshed(broker, r, params)):
            kept.append(r)
        else:
            again.append(r.sp)
    fresh = [sp for key, sp in marked.items() if key not in first]
    if not again and not fresh:
        return kept
    return kept + _read_all(broker, again + fresh, params, may_read, view.session_id, updated={id(sp) for sp in again})


def _still_led(broker, r: _Read) -> bool:
    part = broker.replicas.get(*r.key) if r.key else None
    return (part is not None and part.is_leader and not part.offline
            and not part.check_epoch(r.sp.current_leader_epoch))


def _refreshed(broker, r: _Read, params: FetchParams) -> bool:
    """A partition read empty and marked since: when it still has nothing to read at the fetch's
    position, take its watermarks again (a follower's high watermark moved by this very fetch)."""
    part = broker.replicas.get(*r.key)
    if r.sp.fetch_offset < part.max_offset(params.isolation) or r.sp.fetch_offset < part.log_start_offset:
        return False
    r.hw, r.log_start = part.high_watermark, part.log_start_offset
    r.lso = r.hw if params.from_follower else part.last_stable_offset
    return True


def _may_read(broker, header, replica_id: int):
    """The ACL rule of this fetch (Kafka's KafkaApis.handleFetchRequest): a follower needs
    CLUSTER_ACTION on the cluster, a consumer READ on each topic; a partition refused
    answers TOPIC_AUTHORIZATION_FAILED."""
    if broker.authorizer is None:
        return lambda name: True
    if replica_id >= 0:
        ok = authz.cluster(broker, header, authz.Op.CLUSTER_ACTION)
        return lambda name: ok
    seen: dict[str, bool] = {}

    def may_read(name: str) -> bool:
        if name not in seen:
            seen[name] = authz.topic(broker, header, authz.Op.READ, name)
        return seen[name]
    return may_read


def _moved_here(broker, params: FetchParams, view) -> bool:
    """A follower's fetch whose session lacks a partition it just started to follow here is not
    parked (``replication.leader_moves``)."""
    if not params.from_follower:
        return False

    def holds(key) -> bool:
        if not params.by_topic_id:
            return view.contains(key)
        part = broker.replicas.get(*key)
        return part is not None and view.contains((part.topic_id, key[1]))
    return broker.replicas.must_answer_now(params.replica_id, holds)


class _Read:
    __slots__ = ("aborted", "diverging", "error", "hw", "key", "log_start", "lso", "more", "parts", "remote", "size",
                 "sp")

    def __init__(self, sp, key=None, error=ErrorCode.NONE):
        self.sp, self.key, self.error = sp, key, error
        self.parts, self.size = [], 0
        self.more = False           # records were there to read (below the bound) but none went out
        self.hw = self.lso = self.log_start = -1
        self.diverging = None
        self.remote = None          # (partition, its byte budget, first) when served from remote storage
        self.aborted = None         # read_committed: the aborted transactions in what is read (KIP-98)


def _satisfied(reads, min_bytes) -> bool:
    """Answer now: an error, a diverging epoch (the follower must truncate before anything else;
    Kafka's ReplicaManager.fetchMessages answers it at once too) or enough bytes."""
    return any(r.error or r.diverging for r in reads) or sum(r.size for r in reads) >= min_bytes


def _read_all(broker, partitions, params: FetchParams, may_read, session_id: int, updated=()) -> list[_Read]:
    """Read ``partitions`` in order within the fetch's byte budget; a follower's fetch updates the
    leader's view of that replica for each, except those whose ``id`` is in ``updated``, and what
    that changed is carried out once (``apply_round``; its session ``session_id`` carries the news)."""
    reads, budget, first = [], params.max_bytes, True
    moved: list = []            # what the follower's positions changed, carried out once for the fetch
    for sp in partitions:
        r = _read_one(broker, sp, params, budget, first, may_read, moved if params.from_follower and
                      id(sp) not in updated else None)
        budget -= r.size
        first = first and not r.size
        reads.append(r)
    if moved:
        broker.replicas.apply_round(moved, session_id)
    return reads


def _read_one(broker, sp, params: FetchParams, budget, first, may_read, moved: list | None) -> _Read:
    """One partition's read; ``moved`` (a follower's fetch): the leader's view of the follower is
    updated and what that changed is added to it."""
    name = sp.topic_key
    if params.by_topic_id:
        info = broker.image.topic_by_id(sp.topic_key)
        if info is None:
            return _Read(sp, error=ErrorCode.UNKNOWN_TOPIC_ID)
        name = info.name
    if not may_read(name):
        return _Read(sp, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    part, error = broker.led_partition(name, sp.partition)
    if part is None:
        return _Read(sp, (name, sp.partition) if error == ErrorCode.NOT_LEADER_OR_FOLLOWER else None, error)
    r = _Read(sp, part.key, part.check_epoch(sp.current_leader_epoch) or error)
    # a follower reads no LastStableOffset (its fetcher takes the high watermark and log start): the
    # high watermark stands for it, as after its update below, and the LSO is not computed
    r.hw, r.log_start = part.high_watermark, part.log_start_offset
    r.lso = r.hw if params.from_follower else part.last_stable_offset
    if r.error:
        return r
    if sp.last_fetched_epoch >= 0 and _diverges(part, sp, r):
        return r
    limit = min(sp.max_bytes, max(budget, 0))
    source = _tiered_source(broker, part, sp.fetch_offset, params.replica_id)
    if source is FetchSource.REMOTE:
        r.remote = (part, limit, first)
        r.more = True
        if params.isolation_level == READ_COMMITTED:
            r.aborted = []          # filled from the remote .txnindex with the records
        return r
    if source is FetchSource.OFFSET_MOVED_TO_TIERED_STORAGE:
        r.error = ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE
        return r
    read = part.read(sp.fetch_offset, limit, params.isolation, min_one_batch=first)
    r.error = read.error
    if not read.error:
        r.parts, r.size, r.more = read.parts, read.size, read.more
        if params.read_committed_consumer:
            r.aborted = _aborted_field(read.aborted)
        if moved is not None:
            # a session partition the request does not name is fetched at the position it last named
            # (Kafka updates every session partition's follower state on every fetch)
            r.error = broker.replicas.on_follower_fetch(part, params.replica_id, sp, params.replica_epoch, moved)
            r.hw = r.lso = part.high_watermark
            if r.error:
                r.parts, r.size, r.more = [], 0, False
    return r


def _aborted_field(aborted) -> list[dict]:
    return [{"ProducerId": a.producer_id, "FirstOffset": a.first_offset} for a in aborted]


def _tiered_source(broker, part, offset: int, replica_id: int) -> FetchSource | None:
    """KIP-405: where a fetch below the local log start of a tiered log is served from (None: local rules)."""
    if broker.remote is None or not part.tiered or offset >= part.local_log_start_offset:
        return None
    return fetch_source(part.tiered_state(), offset, from_follower=replica_id >= 0)


async def _read_remote(broker, reads: list[_Read], max_bytes: int) -> None:
    """Serve every remote partition of the fetch at once, each waiting at most remote.fetch.max.wait.ms;
    one not done by then comes back empty. The response's byte budget still holds."""
    reader = broker.remote.reader
    pending = [r for r in reads if r.remote]
    tasks = {r: asyncio.ensure_future(reader.read(r.remote[0], r.sp.fetch_offset, r.remote[1], r.remote[2],
                                                   read_committed=r.aborted is not None))
             for r in pending}
    done, late = await asyncio.wait(tasks.values(), timeout=reader.max_wait_s)
    for task in late:
        task.cancel()
    budget = max_bytes - sum(r.size for r in reads if not r.remote)
    for r in pending:
        task = tasks[r]
        if task in done:
            answer = task.result()
            r.error = answer.error
            if answer.records and (len(answer.records) <= budget or r.remote[2]):
                r.parts, r.size = [answer.records], len(answer.records)
                budget -= r.size
                if r.aborted is not None:
                    r.aborted = _aborted_field(answer.aborted)
        r.more = not r.size and not r.error
        r.remote = None


def _diverges(part, sp, r) -> bool:
    """KIP-595 "Fetch": the follower's last fetched epoch ends earlier on the leader."""
    epoch, end_offset = part.end_offset_for_epoch(sp.last_fetched_epoch)
    if epoch < sp.last_fetched_epoch or end_offset < sp.fetch_offset:
        r.diverging = {"Epoch": epoch, "EndOffset": end_offset}
        return True
    return False


def _response(broker, view, reads, version, listener=None) -> FetchResponse:
    hints = LeaderHints(broker, listener)
    topics: dict[object, FetchableTopicResponse] = {}
    for r in reads:
        if not view.should_return(r.sp, r.size > 0, r.error, r.hw, r.lso, r.log_start):
            continue
        topic = topics.get(r.sp.topic_key)
        if topic is None:
            topic = topics[r.sp.topic_key] = ({"TopicId": r.sp.topic_key, "Partitions": []} if version >= TOPIC_IDS_FROM
                                              else {"Topic": r.sp.topic_key, "Partitions": []})
        topic["Partitions"].append(_partition(r, hints))
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "SessionId": view.session_id,
            "Responses": list(topics.values()), "NodeEndpoints": hints.node_endpoints()}


def _partition(r: _Read, hints: LeaderHints) -> FetchPartitionData:
    out: FetchPartitionData = {"PartitionIndex": r.sp.partition, "ErrorCode": r.error, "HighWatermark": r.hw,
           "LastStableOffset": r.lso, "LogStartOffset": r.log_start, "AbortedTransactions": r.aborted,
           "PreferredReadReplica": -1, "Records": r.parts or b""}
    if r.diverging is not None:
        out["DivergingEpoch"] = r.diverging
    if r.error in HINTED_ERRORS and r.key is not None:
        out["CurrentLeader"] = hints.current_leader(*r.key)
    return out

