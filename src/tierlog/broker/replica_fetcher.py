"""The replica fetchers' IO: one asyncio task per source (leader) broker.

``ReplicaManager`` keeps a ``replication.ReplicaFetchers`` in line with the
metadata image; ``ReplicaFetcherTasks.sync`` then starts a task for every leader we
follow and stops the tasks of leaders we no longer follow.  A task loops:
``build_fetch_request`` -> Fetch v19 to the leader over its own connection ->
``handle_fetch_response`` (or ``handle_fetch_failure``, closing the
connection) -> apply the actions to the local logs, in order.

BuildRemoteLogAuxState (KIP-405, KIP-1023) and ProbeTieredStart (KIP-1023: the
leader's offsets before an empty replica of a tiered topic fetches, asked
before each Fetch is built) are done by ``remote.follower_state``.
ListLeaderOffset sends ListOffsets v7 to the leader as a replica (our
ReplicaId, the partition's CurrentLeaderEpoch): LATEST then answers the
leader's log end offset, EARLIEST its log start offset.  The answer, an error
code or a lost request (REQUEST_TIMED_OUT) goes back to the core's
``on_leader_offset``, so a partition never stays stuck resolving.
"""
from __future__ import annotations

import asyncio
import logging

from tierlog.net.client import DEFAULT_ROUTE, PeerConnection, PeerRoute, PeerUnavailable
from tierlog.net.tasks import TaskSet
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import (
    FETCH_VERSION,
    Append,
    BuildRemoteLogAuxState,
    ListLeaderOffset,
    ProbeTieredStart,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateHighWatermark,
)

from .remote.follower_state import build_remote_log_aux_state
from .remote.tiered_start_probe import probe_tiered_starts

__all__ = ["ReplicaFetcherTasks"]

log = logging.getLogger(__name__)
IDLE_S = 0.05
LIST_OFFSETS_VERSION = 7
LIST_OFFSETS_TIMEOUT_S = 10.0


class ReplicaFetcherTasks:
    def __init__(self, replicas, image_fn, clock_ms, route: PeerRoute = DEFAULT_ROUTE):
        self.replicas = replicas            # ReplicaManager: .fetchers, .by_id, .node_id
        self.route = route                  # the leaders' inter-broker listener and its security
        self.image_fn = image_fn
        self.clock_ms = clock_ms
        self.tasks: dict[int, asyncio.Task] = {}       # the running task per leader we follow
        self._owned = TaskSet(f"replica fetchers {replicas.node_id}")   # those and cancelled ones still ending

    def sync(self) -> None:
        wanted = set(self.replicas.fetchers.fetchers)
        for leader in [b for b in self.tasks if b not in wanted or self.tasks[b].done()]:
            self.tasks.pop(leader).cancel()
        for leader in wanted - set(self.tasks):
            task = self._owned.spawn(self._run(leader), name=f"replica-fetcher-{leader}")
            if task is not None:
                self.tasks[leader] = task

    async def stop_all(self) -> None:
        """Cancel every fetcher task and wait until they have ended."""
        self.tasks.clear()
        await self._owned.close()

    async def _run(self, leader: int) -> None:
        conn: PeerConnection | None = None
        try:
            while True:
                state = self.replicas.fetchers.fetchers.get(leader)
                if state is None:
                    return
                info = self.image_fn().brokers.get(leader)
                address = None if info is None else self.route.address(info)
                if address is None:
                    await asyncio.sleep(0.5)
                    continue
                if conn is None or (conn.host, conn.port) != address:
                    if conn is not None:
                        conn.close()
                    conn = self.route.connection(*address, f"replica-fetcher-{self.replicas.node_id}")
                probes = state.take_probes(self.clock_ms())
                if probes:
                    await self._probe(state, conn, leader, probes)
                now = self.clock_ms()
                request = state.build_fetch_request(now)
                if request is None:
                    wake = state.next_wakeup_ms()
                    delay = IDLE_S if wake is None else min(max((wake - now) / 1000, 0.0), 0.5)
                    await asyncio.sleep(max(delay, 0.01))
                    continue
                timeout = state.config.max_wait_ms / 1000 + 10.0
                try:
                    response = await conn.request(ApiKey.FETCH, FETCH_VERSION, request, timeout)
                except (TimeoutError, PeerUnavailable, OSError) as e:
                    log.debug("fetch from %d failed: %s", leader, e)
                    conn.close()
                    conn = None
                    actions = state.handle_fetch_failure(self.clock_ms())
                    await asyncio.sleep(0.1)
                else:
                    if self.replicas.fetchers.fetchers.get(leader) is not state:
                        continue            # the fetcher was rebuilt meanwhile: a stale answer
                    actions = state.handle_fetch_response(response, self.clock_ms())
                later = self._apply_round(actions)
                for action in later:                        # in order, after the answer's appends
                    await self._apply(state, conn, leader, action)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("replica fetcher for leader %d failed", leader)
        finally:
            if conn is not None:
                conn.close()

    def _apply_round(self, actions: list) -> list:
        """Apply a fetch answer's appends and high watermarks in one pass, at one clock reading and
        without a coroutine each; the other actions, in their order, for ``_apply``.  Those are
        never about a partition that also has an append in the same answer (an answer gives a
        partition either its records and high watermark, or one other action)."""
        now = self.clock_ms()
        by_id = self.replicas.by_id
        later = []
        for action in actions:
            kind = type(action)
            if kind is Append:
                part = by_id(action.key)
                if part is not None:
                    try:
                        part.append_as_follower(action.records, now)   # read only: the answer's bytes
                    except Exception as e:  # noqa: BLE001 - as in _apply
                        self._failed(part, action, e)
            elif kind is UpdateHighWatermark:
                part = by_id(action.key)
                if part is not None:
                    try:
                        part.update_follower_high_watermark(action.high_watermark, action.leader_log_start_offset)
                    except Exception as e:  # noqa: BLE001 - as in _apply
                        self._failed(part, action, e)
            else:
                later.append(action)
        return later

    def _apply_now(self, action) -> bool:
        """Apply an append or a high watermark at once (a follow-up of ``_apply``); False for the rest."""
        if type(action) not in (Append, UpdateHighWatermark):
            return False
        self._apply_round([action])
        return True

    def _failed(self, part, action, e: Exception) -> None:
        log.warning("%s-%d: cannot apply %s: %s", part.topic, part.index, type(action).__name__, e)
        if part.offline:        # its log dir failed: drop it before the next fetch request reads it
            self.replicas.check_log_dirs()

    async def _apply(self, state, conn, leader, action) -> None:
        if self._apply_now(action):
            return
        part = self.replicas.by_id(action.key)
        if part is None:
            return
        try:
            if isinstance(action, TruncateTo):
                log.info("%s-%d: truncating to %d", part.topic, part.index, action.offset)
                part.truncate_to(action.offset)
            elif isinstance(action, TruncateFullyAndStartAt):
                log.info("%s-%d: restarting the log at %d", part.topic, part.index, action.offset)
                part.truncate_fully_and_start_at(action.offset)
            elif isinstance(action, BuildRemoteLogAuxState):
                error = await build_remote_log_aux_state(self.replicas.remote, conn, self.replicas.node_id, part,
                                                         action.leader_epoch, action.start_offset,
                                                         action.log_start_offset)
                for follow_up in state.on_remote_aux_state(action.key, action.leader_epoch, error, self.clock_ms()):
                    await self._apply(state, conn, leader, follow_up)
            elif isinstance(action, ProbeTieredStart):
                await self._probe(state, conn, leader, [action])
            elif isinstance(action, ListLeaderOffset):
                error, offset = await self._leader_offset(conn, part, action)
                log.info("%s-%d: out of range at %d; leader %d answered %s offset %d (error %d)", part.topic,
                         part.index, part.log_end_offset, leader, "latest" if action.timestamp == -1 else "earliest",
                         offset, error)
                follow_ups = state.on_leader_offset(action.key, action.leader_epoch, action.timestamp, error, offset,
                                                    self.clock_ms())
                for follow_up in follow_ups:
                    await self._apply(state, conn, leader, follow_up)
        except Exception as e:      # noqa: BLE001 - the next fetch starts again from the log end
            self._failed(part, action, e)

    async def _probe(self, state, conn, leader, probes: list[ProbeTieredStart]) -> None:
        """KIP-1023: the leader's offsets for every probed partition (batched), then each one's actions."""
        parts = [(probe, self.replicas.by_id(probe.key)) for probe in probes]
        for probe, part in parts:
            if part is None:            # gone meanwhile: its fetch state goes with the next image
                state.on_tiered_start(probe.key, probe.leader_epoch, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None,
                                      self.clock_ms())
        parts = [(probe, part) for probe, part in parts if part is not None]
        try:
            answers = await probe_tiered_starts(conn, self.replicas.node_id,
                                                [(part, probe.leader_epoch) for probe, part in parts])
        except Exception as e:          # noqa: BLE001 - a bad answer: back off, probe again
            log.warning("KIP-1023 probe of leader %d failed: %s", leader, e)
            answers = [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * len(parts)
        for (probe, part), (error, offsets) in zip(parts, answers, strict=True):
            level = logging.INFO if error or (offsets is not None and offsets.log_end > 0) else logging.DEBUG
            log.log(level, "%s-%d: empty replica of a tiered topic; leader %d answered %s (error %d)", part.topic,
                    part.index, leader, offsets, error)
            for follow_up in state.on_tiered_start(probe.key, probe.leader_epoch, error, offsets, self.clock_ms()):
                await self._apply(state, conn, leader, follow_up)

    async def _leader_offset(self, conn, part, action: ListLeaderOffset) -> tuple[int, int]:
        """(error code, offset) of one ListOffsets to the leader, asked as replica ``node_id``."""
        body = {"ReplicaId": self.replicas.node_id, "IsolationLevel": 0,
                "Topics": [{"Name": part.topic, "Partitions": [
                    {"PartitionIndex": part.index, "CurrentLeaderEpoch": action.leader_epoch,
                     "Timestamp": action.timestamp}]}]}
        try:
            resp = await conn.request(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body, LIST_OFFSETS_TIMEOUT_S)
        except (TimeoutError, PeerUnavailable, OSError) as e:
            log.debug("%s-%d: ListOffsets to the leader failed: %s", part.topic, part.index, e)
            return ErrorCode.REQUEST_TIMED_OUT, -1
        answers = [q for t in resp.get("Topics", ()) for q in t.get("Partitions", ())
                   if q.get("PartitionIndex") == part.index]
        if not answers:
            return ErrorCode.UNKNOWN_SERVER_ERROR, -1
        return answers[0].get("ErrorCode", ErrorCode.NONE), answers[0].get("Offset", -1)
