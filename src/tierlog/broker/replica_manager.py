"""The partitions this broker hosts (Kafka's ``ReplicaManager``): the partition map, and the
executor of what partitions return.

A ``Partition`` (``broker.partition``) owns its whole life; each of its calls returns a
``PartitionUpdate`` that ``_apply`` carries out: answer the completed acks=all and
DeleteRecords futures, wake fetches parked on a moved high watermark (``fetch_purgatory``),
send an AlterPartition (``alter_partition_sender``), put a led partition on the next tick's
list (``leader_ticker``).  Appends wake fetches that long-poll on a partition.

Its separate concerns live beside it, each with its own tests:

- ``image_follower``: which partitions an image or a delta changes; this class hosts,
  unhosts and drops them (``host``: the log created if new, then ``Partition.become_leader``
  / ``update_leader`` / ``become_follower`` per the image), in slices of the event loop's
  time (``apply_slices``).  Where each hosted replica's log lives is reported to the
  controller (AssignReplicasToDirs, ``dir_assignments``) whenever the image says otherwise.
- ``log_dir_failure``: a failed log dir's partitions are dropped (``mark_offline``: parked
  requests fail, fetchers stop) and stay offline until the broker restarts; the controller
  moves their leadership away (KIP-858).
- ``tiering_hooks``: who hears of leadership (the RemoteLogManager, then the coordinators),
  and KIP-1023's ``follower.fetch.last.tiered.offset.enable`` and each followed partition's
  tiering traits, pushed to the fetchers with every image.
- ``partition_transitions``: leader or follower per the image (``become_leader`` /
  ``update_leader`` / ``become_follower``, the fetchers, the listeners).
- ``fetch_purgatory``: fetches parked until a partition has news; ``leader_ticker``: the
  leaders' periodic work, for the partitions where something can change;
  ``hw_checkpoints``: ``replication-offset-checkpoint``; ``alter_partition_sender``:
  AlterPartition to the controller and its answer back to the partition.

Built with everything it uses (the controller channel for AlterPartition, the
broker epoch, the image).  ``start`` begins replication once the broker is
unfenced (only an image caught up with the metadata log may decide which local
logs to keep, so no image is applied before); ``stop`` cancels and awaits the
ticker, the fetchers and in-flight AlterPartition requests, then checkpoints the
high watermarks.

AlterReplicaLogDirs moves a replica to another log dir (``log_dir_moves``; the
future log and the swap are the partition's), then reports its new dir.
"""
from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from tierlog.config import int_setting
from tierlog.metadata import MetadataImage, TopicInfo
from tierlog.net.client import DEFAULT_ROUTE, PeerRoute
from tierlog.net.tasks import TaskSet
from tierlog.protocol.errors import ErrorCode
from tierlog.replication import FetcherConfig, ReplicaFetchers
from tierlog.replication.leader_moves import LeaderMoves
from tierlog.storage import KafkaStorageError, LogConfig, LogManager

from .alter_partition_sender import AlterPartitionSender
from .apply_slices import ApplySlices
from .clean_limits import CleanLimits
from .dir_assignments import DirAssignments, DirAssignmentSender
from .fetch_purgatory import FetchPurgatory
from .fetch_session import FetchSessionCache, SessionPartition
from .hw_checkpoints import HighWatermarkCheckpoints
from .image_follower import ImageFollower
from .leader_ticker import TICK_S, LeaderTicker
from .log_dir_failure import LogDirFailures
from .log_dir_moves import LogDirMoves
from .partition import AppendOrigin, AppendOutcome, Partition, PartitionUpdate
from .partition_transitions import PartitionTransitions
from .replica_fetcher import ReplicaFetcherTasks
from .tiering_hooks import LAST_TIERED_OFFSET_ENABLE, LeadershipListener, TieringHooks, as_bool

__all__ = ["LAST_TIERED_OFFSET_ENABLE", "LeadershipListener", "ReplicaManager"]

log = logging.getLogger(__name__)



class ReplicaManager:
    def __init__(self, node_id: int, logs: LogManager, topic_defaults: dict[str, str],
                 clock_ms: Callable[[], int], controller_channel, broker_epoch: Callable[[], int],
                 image_fn: Callable[[], MetadataImage], config: Mapping[str, object] | None = None,
                 inter_broker: PeerRoute = DEFAULT_ROUTE, dir_ids: Mapping[Path, bytes] | None = None,
                 assignment_channel=None, remote=None):
        """``controller_channel``: async ``.send`` (AlterPartition, AssignReplicasToDirs); ``config``: the
        replica.* settings; ``inter_broker``: how the fetchers reach leaders; ``dir_ids``: each log dir's
        ``directory.id`` (KIP-858); ``assignment_channel``: the channel for AssignReplicasToDirs (default:
        ``controller_channel``); ``remote``: the broker's RemoteTier when tiered storage is on (the
        follower path reads remote storage; its log manager follows leadership)."""
        cfg = config or {}
        self.node_id = node_id
        self.logs = logs
        self.topic_defaults = topic_defaults
        self._clock_ms = clock_ms
        self._broker_epoch = broker_epoch
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._clean_limits: CleanLimits | None = None       # start() makes it, for the log cleaners
        self.fetch_sessions = FetchSessionCache(int_setting(cfg, "max.incremental.fetch.session.cache.slots", 1000),
                                                random.Random())
        self.fetch_purgatory = FetchPurgatory(self.fetch_sessions)
        self._replica_fetch_ms: dict[int, int] = {}     # each follower's latest Fetch here (any partition)
        self.hw_checkpoints = HighWatermarkCheckpoints(
            logs, self._high_watermark_of, int_setting(cfg, "replica.high.watermark.checkpoint.interval.ms", 5_000),
            clock_ms())
        self.ticker = LeaderTicker(self.partitions, self._apply, self._mark_for_followers)
        self._by_id: dict[tuple[bytes, int], Partition] = {}
        self._request_timeout_ms = int_setting(cfg, "request.timeout.ms", 30_000)
        self.fetchers = ReplicaFetchers(node_id, config=FetcherConfig(
            max_wait_ms=int_setting(cfg, "replica.fetch.wait.max.ms", 500),
            max_bytes=int_setting(cfg, "replica.fetch.response.max.bytes", 10 * 1024 * 1024),
            partition_max_bytes=int_setting(cfg, "replica.fetch.max.bytes", 1024 * 1024),
            backoff_ms=int_setting(cfg, "replica.fetch.backoff.ms", 1000)))
        self.fetcher_tasks = ReplicaFetcherTasks(self, image_fn, clock_ms, inter_broker)
        self.leader_moves: LeaderMoves[tuple[str, int]] = LeaderMoves(int_setting(cfg, "replica.fetch.wait.max.ms", 500))
        self._tasks = TaskSet(f"replica manager {node_id}")     # the ticker and AlterPartition requests
        self.alter_partitions = AlterPartitionSender(controller_channel, node_id, broker_epoch,
                                                     self._request_timeout_ms / 1000, self._tasks, clock_ms)
        self._dir_ids = dict(dir_ids or {})
        self.dir_assignments = DirAssignmentSender(DirAssignments(node_id), assignment_channel or controller_channel,
                                                   image_fn, broker_epoch, clock_ms, self._request_timeout_ms / 1000,
                                                   self._tasks)
        self.log_dir_moves = LogDirMoves(logs, self.get, self._reobserve_dir, clock_ms, self._tasks)
        self.remote = remote
        # who follows leadership changes: tiered storage, then the coordinators (add_leadership_listener)
        self.tiering = TieringHooks(node_id, remote.log_manager if remote is not None else None,
                                    as_bool(cfg.get(LAST_TIERED_OFFSET_ENABLE, False)))
        self.transitions = PartitionTransitions(
            node_id, self.fetchers, self.leader_moves, self.tiering, self.fetch_purgatory, topic_defaults,
            int_setting(cfg, "replica.lag.time.max.ms", 30_000), broker_epoch, clock_ms, self._apply)
        self._image_follower = ImageFollower(self)
        self._slices = ApplySlices()
        self.log_dirs = LogDirFailures(logs)            # partitions whose log dir failed

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        """``listener`` hears of every partition this broker starts or stops leading (the group and
        transaction coordinators load and unload their partitions through it)."""
        self.tiering.add_listener(listener)

    def get(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def _clean_limit(self, key: tuple[str, int]) -> int | None:
        """The last stable offset of a hosted partition (at most its high watermark; Kafka's cleaner
        never cleans at or above it: no undecided transaction is cleaned), else None (on the event
        loop: the cleaner threads ask through CleanLimits)."""
        part = self.partitions.get(key)
        return None if part is None else part.last_stable_offset

    def _high_watermark_of(self, key: tuple[str, int]) -> int | None:
        part = self.partitions.get(key)
        return None if part is None else part.high_watermark

    def log_config(self, topic: TopicInfo) -> LogConfig:
        return LogConfig.from_props({**self.topic_defaults, **topic.configs})

    # -- following the metadata image (``image_follower`` picks the partitions; this hosts them) ----
    def apply_image(self, image: MetadataImage, delta=None) -> None:
        """Follow ``image`` (``delta``: what led to it from the image applied last, if known), in
        slices of the event loop's time (``apply_slices``)."""
        self._slices.submit(self._image_follower.steps(image, delta), self.fetcher_tasks.sync)

    def hosted(self) -> Iterable[tuple[str, int]]:
        return list(self.partitions)

    def stored_logs(self) -> Iterable[tuple[str, int]]:
        return self.logs.logs()

    def delete_log(self, key: tuple[str, int]) -> None:
        log.info("deleting log of %s-%d: not in the metadata image", *key)
        self.logs.delete(*key)

    def follow_cluster(self, image: MetadataImage) -> None:
        self.fetchers.update_last_tiered_offset_enable(self.tiering.last_tiered_offset_enable(image))

    def host(self, image: MetadataImage, topic: TopicInfo, p, config: LogConfig) -> None:
        """Host ``p`` (its log created if new) as leader or follower per the image."""
        if self.log_dirs.is_offline((topic.name, p.partition)):
            return
        try:
            part = self._ensure(topic, p, config)
        except KafkaStorageError as e:      # no online log dir left (the broker is about to stop)
            log.warning("%s-%d: not hosted here: %s", topic.name, p.partition, e)
            return
        self._observe_dir(topic, p)
        try:
            self.transitions.transition(image, part, p)
        except Exception:
            log.exception("%s-%d: leader/follower transition failed", *part.key)

    def _observe_dir(self, topic: TopicInfo, p) -> None:
        """KIP-858: tell the controller where this replica's log lives if the image says otherwise."""
        log_dir = self.logs.log_dir_of(topic.name, p.partition)
        dir_id = self._dir_ids.get(log_dir) if log_dir is not None else None
        if dir_id is not None and self.dir_assignments.core.observe(topic.topic_id, p, dir_id):
            self.dir_assignments.kick()

    def _reobserve_dir(self, key: tuple[str, int]) -> None:
        """A log dir move finished: the controller learns the replica's new dir."""
        topic = self._image_follower.image.topics.get(key[0])
        if topic is not None and key[1] < len(topic.partitions):
            self._observe_dir(topic, topic.partitions[key[1]])

    def on_corrupt_segment(self, key: tuple[str, int], offset: int) -> None:
        """The background check found a bad batch in a closed segment of ``key`` from ``offset`` on.

        A follower truncates there and fetches the rest again from its leader; a
        leader has nobody to fetch from and says so (its followers' copies are good:
        move leadership, then restart it to truncate).
        """
        part = self.partitions.get(key)
        if part is None:
            return
        if part.is_leader:
            log.error("%s-%d: this leader's log is corrupt from offset %d and it cannot fetch it again; elect "
                      "another leader (tierlog elect-leaders) and restart this broker", *key, offset)
            return
        id_key = (part.topic_id, part.index)
        self.fetchers.stop_following(id_key)
        part.truncate_to(offset)
        log.warning("%s-%d: truncated to %d after a corrupt batch; fetching it again from leader %d",
                    *key, offset, part.leader_id)
        if part.leader_id >= 0:
            self.fetchers.become_follower(id_key, part.leader_id, part.leader_epoch, part.follower_view(),
                                          self.tiering.topic_tiering(part))
        self.fetcher_tasks.sync()

    def check_log_dirs(self) -> None:
        """A log just failed: take its dir offline now (``mark_offline`` follows through the node)."""
        self.log_dirs.check()

    def mark_offline(self) -> None:
        """Stop hosting every partition whose log went offline with its log dir."""
        gone = self.log_dirs.take_offline(self.partitions)
        for key in gone:
            self.drop(key)
        if gone:
            self.fetcher_tasks.sync()

    def unhost(self, key: tuple[str, int], topic_deleted: bool) -> None:
        """No longer assigned here: stop hosting it and delete its log."""
        self.log_dirs.forget(key)
        self.drop(key, topic_deleted)
        if self.logs.get(*key) is not None:
            self.delete_log(key)

    def _ensure(self, topic: TopicInfo, p, config: LogConfig) -> Partition:
        key = (topic.name, p.partition)
        part = self.partitions.get(key)
        if part is None:
            existing = self.logs.get(*key)
            plog = existing or self.logs.create(topic.name, p.partition, topic.topic_id,
                                                config, self._clock_ms())
            part = self.partitions[key] = Partition(topic.name, p.partition, topic.topic_id, plog,
                                                    -1, -1, replica_fetch_ms=self._replica_fetch_ms,
                                                    hw_moved=self.hw_checkpoints.moved)
            # Kafka's replication-offset-checkpoint: never start above what was
            # known committed (a restarted replica must not expose unreplicated records)
            part.follower_hw = self.logs.checkpointed_high_watermark(*key) if existing is not None else 0
            self._by_id[(topic.topic_id, p.partition)] = part
            part.update_config(config)          # a log loaded at start has the defaults until now
            self.log_dir_moves.resume(part)     # a move under way at shutdown goes on
            return part
        part.update_config(config)
        return part

    def drop(self, key: tuple[str, int], topic_deleted: bool = False) -> None:
        """Stop hosting ``key`` (its log stays): listeners hear, waiters fail, fetches wake."""
        part = self.partitions.pop(key, None)
        if part is not None:
            self.tiering.on_stopped(part, topic_deleted)
            self._by_id.pop((part.topic_id, part.index), None)
            self.fetchers.stop_following((part.topic_id, part.index))
            self._apply(part, part.stop())
            self.notify_changed(part)
        self.fetch_purgatory.wake(key)

    # -- replication ------------------------------------------------------------
    def start(self) -> None:
        """Begin replicating (the broker is registered and unfenced): the fetchers use its epoch, and
        the log cleaners start, below each partition's last stable offset (read on this loop)."""
        self._clean_limits = CleanLimits(asyncio.get_running_loop(), self._clean_limit)
        self.logs.start_cleaners(self._clean_limits.limits_of)
        self.fetchers.use_replica_epoch(self._broker_epoch())
        self.hw_checkpoints.restart(self._clock_ms())
        self._tasks.spawn(self._tick_loop(), name=f"replication-tick-{self.node_id}")

    async def stop(self) -> None:
        """Cancel and await the ticker, the fetchers and AlterPartition requests; checkpoint the HWs."""
        self._slices.close()
        if self._clean_limits is not None:
            self._clean_limits.close()      # the cleaners stop next (LogManager.close): none waits for this loop
        await self._tasks.close()
        await self.fetcher_tasks.stop_all()
        self.hw_checkpoints.write(self._clock_ms())

    def by_id(self, key) -> Partition | None:
        return self._by_id.get(key)

    # leader side ---------------------------------------------------------------
    def append_records(self, part: Partition, records: bytearray, origin: AppendOrigin, required_acks: int,
                       timeout_ms: int) -> tuple[AppendOutcome, asyncio.Future | None]:
        """Append as the leader (``Partition.append_as_leader``) and act on what moved; for acks=all
        also a future of the error code once the high watermark passes the batch (None: no wait).
        The one way Produce and the coordinators write (Kafka's ``ReplicaManager.appendRecords``)."""
        waiter = asyncio.get_running_loop().create_future() if required_acks == -1 else None
        outcome = part.append_as_leader(records, origin, required_acks, self._clock_ms(), waiter, timeout_ms)
        return self._after_append(part, outcome), waiter if outcome.parked else None

    def append_markers(self, part: Partition, markers: list[tuple[bytearray, int]],
                       timeout_ms: int) -> tuple[list[int], asyncio.Future | None]:
        """Transaction markers ``(control batch, TransactionVersion)`` in one write, acks=all
        (``Partition.append_markers_as_leader``): each marker's error code, and a future of the
        write's once the high watermark passes it (None: nothing to wait for)."""
        waiter = asyncio.get_running_loop().create_future()
        outcome, codes = part.append_markers_as_leader(markers, self._clock_ms(), waiter, timeout_ms)
        self._after_append(part, outcome)
        return codes, waiter if outcome.parked else None

    def _after_append(self, part: Partition, outcome: AppendOutcome) -> AppendOutcome:
        """``_apply`` for an append as the leader: the fetchers hear of the records and the high
        watermark in one mark; the tick visits the partition only if it can change something there."""
        if outcome.appended:
            upd = outcome.update
            if upd.acks or upd.deletes:
                _answer(upd.acks, upd.deletes)
            if upd.tick:
                self.ticker.activate(part.key)
            if upd.alter_partition is not None:
                self.alter_partitions.propose(part, upd.alter_partition, self._apply)
            self.notify_changed(part)
        return outcome

    def on_follower_fetch(self, part: Partition, replica_id: int, fetched: SessionPartition, replica_epoch: int,
                          moved: list[tuple[Partition, PartitionUpdate]]) -> int:
        """A follower's fetch of ``part`` at ``fetched`` (its position, log start and KIP-1303 local log):
        the partition's follower state learns it; the error (NOT_LEADER_OR_FOLLOWER: not a replica).
        What it changed goes to ``moved``, carried out for the whole fetch at once (``apply_round``)."""
        upd = part.on_follower_fetch(replica_id, fetched.fetch_offset, self._clock_ms(), replica_epoch,
                                     fetched.log_start_offset, fetched.local_log_start_timestamp,
                                     fetched.local_log_size_bytes)
        if upd is None:
            return 0
        self.leader_moves.fetched(replica_id, part.key)
        if upd.acks or upd.deletes or upd.hw_advanced or upd.alter_partition is not None:
            moved.append((part, upd))
        else:
            self.ticker.activate(part.key)
        return upd.error

    def apply_round(self, moved: list[tuple[Partition, PartitionUpdate]], session_id: int = 0) -> None:
        """Carry out what one follower fetch changed, for all its partitions at once: the acks=all and
        DeleteRecords waiters answered, the partitions whose high watermark moved marked in the fetch
        sessions in one pass (their parked fetches woken), AlterPartitions sent.  The follower's own
        session (``session_id``) is not marked: the answer to this fetch carries each partition's
        new high watermark (read after its update), so marking it would only wake the fetch at once
        for another round trip that says nothing new."""
        hw_moved = []
        for part, upd in moved:
            if upd.acks or upd.deletes:
                _answer(upd.acks, upd.deletes)
            if not part.is_leader:
                continue
            self.ticker.activate(part.key)
            if upd.hw_advanced:
                hw_moved.append(part)
            if upd.alter_partition is not None:
                self.alter_partitions.propose(part, upd.alter_partition, self._apply)
        if hw_moved:
            self.fetch_purgatory.changed_all([(p.key, (p.topic_id, p.index)) for p in hw_moved], records=False,
                                             answered=session_id)

    def _apply(self, part: Partition, upd: PartitionUpdate) -> None:
        """Carry out what a partition call changed: answer its completed waiters, wake fetches parked
        on a moved high watermark, send its AlterPartition; a leader is visited by the next tick."""
        if upd.acks or upd.deletes:
            _answer(upd.acks, upd.deletes)
        if not part.is_leader:
            return
        if upd.tick:
            self.ticker.activate(part.key)
        if upd.hw_advanced:
            self.notify_changed(part, records=False)
        if upd.alter_partition is not None:
            self.alter_partitions.propose(part, upd.alter_partition, self._apply)

    def delete_records(self, part: Partition, offset: int, timeout_ms: int) -> tuple[int, int, asyncio.Future | None]:
        """DeleteRecords on the leader (``Partition.delete_records_on_leader``): raise the log start to
        ``offset`` (-1: the high watermark).  (error, low watermark, future of (error, low watermark)
        while the ISR catches up, else None)."""
        error, target, moved, lw = part.delete_records_on_leader(offset)
        if error:
            return error, -1, None
        if moved:
            log.info("%s-%d: log start offset raised to %d (DeleteRecords)", part.topic, part.index, target)
            self.notify_changed(part, records=False)
        if lw >= target:
            return ErrorCode.NONE, lw, None
        fut = asyncio.get_running_loop().create_future()
        part.park_delete(fut, target, self._clock_ms(), timeout_ms)
        return ErrorCode.NONE, lw, fut

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.tick(self._clock_ms())
            except Exception:
                log.exception("replication tick failed")

    def tick(self, now: int) -> None:
        """Checkpoint the high watermarks when due, then the leaders' periodic work (``LeaderTicker``)."""
        if self.hw_checkpoints.due(now):
            self.hw_checkpoints.write(now)
        self.ticker.tick(now)

    def _mark_for_followers(self, part: Partition) -> None:
        self.fetch_purgatory.mark_only(part.key, (part.topic_id, part.index))

    # -- appends and long polls -------------------------------------------------
    def notify_changed(self, part: Partition, records: bool = True) -> None:
        """``part`` has news for fetchers (records, its high watermark or log start moved, leadership
        lost): ``FetchPurgatory.changed``."""
        self.fetch_purgatory.changed(part.key, (part.topic_id, part.index), records)

    def on_replica_fetch(self, replica_id: int) -> None:
        """A follower's Fetch arrived: every partition of its session is fetched as of now."""
        self._replica_fetch_ms[replica_id] = self._clock_ms()

    def must_answer_now(self, replica_id: int, holds: Callable[[tuple[str, int]], bool]) -> bool:
        """Whether a follower's fetch lacks a partition that just moved here (``LeaderMoves``);
        ``holds(key)``: the fetch (its session) has partition ``key``."""
        return self.leader_moves.must_answer_now(replica_id, holds, self._clock_ms())


def _answer(acks, deletes):
    """Answer the waiters a partition completed (futures of this loop): acks=all with its error code,
    DeleteRecords with (error, low watermark)."""
    for c in acks:
        if not c.token.done():
            c.token.set_result(c.error)
    for d in deletes:
        if not d.token.done():
            d.token.set_result((d.error, d.low_watermark))
