"""The partitions this broker hosts (Kafka's ``ReplicaManager``): the partition map, and the
executor of what partitions return.

A ``Partition`` (``broker.partition``) owns its whole life; each of its calls returns a
``PartitionUpdate`` that ``_apply`` carries out: answer the completed acks=all and
DeleteRecords futures, wake fetches parked on a moved high watermark, send an
AlterPartition (``alter_partition_sender``), put a led partition on the next tick's
list.  Appends wake fetches that long-poll on a partition (``wait_for_data``).

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
from tierlog.replication import (
    AlterPartitionItem,
    FetcherConfig,
    LeaderConfig,
    ReplicaFetchers,
)
from tierlog.replication.leader_moves import LeaderMoves
from tierlog.storage import LogConfig, LogManager

from .alter_partition_sender import AlterPartitionSender
from .apply_slices import ApplySlices
from .clean_limits import CleanLimits
from .dir_assignments import DirAssignments, DirAssignmentSender
from .fetch_session import FetchSessionCache, SessionPartition
from .image_follower import ImageFollower
from .log_dir_failure import LogDirFailures
from .log_dir_moves import LogDirMoves
from .partition import AppendOrigin, AppendOutcome, Partition, PartitionUpdate
from .replica_fetcher import ReplicaFetcherTasks
from .sweep import Sweep
from .tiering_hooks import LAST_TIERED_OFFSET_ENABLE, LeadershipListener, TieringHooks, as_bool

__all__ = ["LAST_TIERED_OFFSET_ENABLE", "LeadershipListener", "ReplicaManager"]

log = logging.getLogger(__name__)


TICK_S = 0.2
SWEEP_MS = 30_000       # every led partition is ticked at least this often, quiet or not
ELIGIBLE_BYTES = "leader.election.eligible.local.log.bytes"     # KIP-1303


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
        self._watchers: dict[tuple[str, int], set[asyncio.Future]] = {}   # sessionless parked fetches
        self.fetch_sessions = FetchSessionCache(int_setting(cfg, "max.incremental.fetch.session.cache.slots", 1000),
                                                random.Random())
        self._replica_fetch_ms: dict[int, int] = {}     # each follower's latest Fetch here (any partition)
        self._hw_moved: set[tuple[str, int]] = set()     # high watermarks to checkpoint (``Partition.hw_moved``)
        self._active: set[tuple[str, int]] = set()      # led partitions the next tick visits
        self._sweep: Sweep[tuple[str, int]] = Sweep(SWEEP_MS // int(TICK_S * 1000))
        self._by_id: dict[tuple[bytes, int], Partition] = {}
        self._lag_ms = int_setting(cfg, "replica.lag.time.max.ms", 30_000)
        self._request_timeout_ms = int_setting(cfg, "request.timeout.ms", 30_000)
        self._hw_checkpoint_interval_ms = int_setting(cfg, "replica.high.watermark.checkpoint.interval.ms", 5_000)
        self._last_hw_checkpoint_ms = clock_ms()
        self.fetchers = ReplicaFetchers(node_id, config=FetcherConfig(
            max_wait_ms=int_setting(cfg, "replica.fetch.wait.max.ms", 500),
            max_bytes=int_setting(cfg, "replica.fetch.response.max.bytes", 10 * 1024 * 1024),
            partition_max_bytes=int_setting(cfg, "replica.fetch.max.bytes", 1024 * 1024),
            backoff_ms=int_setting(cfg, "replica.fetch.backoff.ms", 1000)))
        self.fetcher_tasks = ReplicaFetcherTasks(self, image_fn, clock_ms, inter_broker)
        self.leader_moves: LeaderMoves[tuple[str, int]] = LeaderMoves(int_setting(cfg, "replica.fetch.wait.max.ms", 500))
        self._tasks = TaskSet(f"replica manager {node_id}")     # the ticker and AlterPartition requests
        self._alter_sender = AlterPartitionSender(controller_channel, node_id, broker_epoch,
                                                  self._request_timeout_ms / 1000, self._tasks)
        self._dir_ids = dict(dir_ids or {})
        self.dir_assignments = DirAssignmentSender(DirAssignments(node_id), assignment_channel or controller_channel,
                                                   image_fn, broker_epoch, clock_ms, self._request_timeout_ms / 1000,
                                                   self._tasks)
        self.log_dir_moves = LogDirMoves(logs, self.get, self._reobserve_dir, clock_ms, self._tasks)
        self.remote = remote
        # who follows leadership changes: tiered storage, then the coordinators (add_leadership_listener)
        self.tiering = TieringHooks(node_id, remote.log_manager if remote is not None else None,
                                    as_bool(cfg.get(LAST_TIERED_OFFSET_ENABLE, False)))
        self._image_follower = ImageFollower(self)
        self._slices = ApplySlices()
        self.log_dirs = LogDirFailures(logs)            # partitions whose log dir failed
        self.isr_changes = {"shrink": 0, "expand": 0}   # accepted AlterPartitions (IsrShrinks/ExpandsPerSec)

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
        part = self._ensure(topic, p, config)
        self._observe_dir(topic, p)
        try:
            self._transition(image, part, p)
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
                                                    hw_moved=self._hw_moved)
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
        for fut in self._watchers.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    # -- replication ------------------------------------------------------------
    def start(self) -> None:
        """Begin replicating (the broker is registered and unfenced): the fetchers use its epoch, and
        the log cleaners start, below each partition's last stable offset (read on this loop)."""
        self._clean_limits = CleanLimits(asyncio.get_running_loop(), self._clean_limit)
        self.logs.start_cleaners(self._clean_limits.limits_of)
        self.fetchers.use_replica_epoch(self._broker_epoch())
        self._last_hw_checkpoint_ms = self._clock_ms()
        self._tasks.spawn(self._tick_loop(), name=f"replication-tick-{self.node_id}")

    async def stop(self) -> None:
        """Cancel and await the ticker, the fetchers and AlterPartition requests; checkpoint the HWs."""
        self._slices.close()
        if self._clean_limits is not None:
            self._clean_limits.close()      # the cleaners stop next (LogManager.close): none waits for this loop
        await self._tasks.close()
        await self.fetcher_tasks.stop_all()
        self.checkpoint_high_watermarks()

    def checkpoint_high_watermarks(self) -> None:
        """Write the high watermarks that moved since the last checkpoint to their log dirs'
        replication-offset-checkpoint (the others keep theirs): an idle broker's checkpoint costs
        nothing per partition."""
        self._last_hw_checkpoint_ms = self._clock_ms()
        moved = list(self._hw_moved)
        self._hw_moved.clear()
        try:
            self.logs.write_high_watermarks({key: part.high_watermark for key in moved
                                             if (part := self.partitions.get(key)) is not None})
        except Exception:
            log.exception("cannot checkpoint high watermarks")

    def by_id(self, key) -> Partition | None:
        return self._by_id.get(key)

    def _transition(self, image: MetadataImage, part: Partition, p) -> None:
        """Leader or follower per the image (``Partition.become_leader`` / ``become_follower``)."""
        now = self._clock_ms()
        id_key = (part.topic_id, part.index)
        if p.leader == self.node_id:
            fenced = frozenset(r for r in p.replicas
                               if r not in image.brokers or not image.brokers[r].usable) - {self.node_id}
            eligible_bytes = self._eligible_bytes(image, part)
            if part.leads(p.leader_epoch):
                self._apply(part, part.update_leader(p, eligible_bytes, fenced, now))
                return
            self.fetchers.stop_following(id_key)
            config = LeaderConfig(replica_lag_time_max_ms=self._lag_ms,
                                  min_insync_replicas=part.config.min_insync_replicas,
                                  eligible_local_log_bytes=eligible_bytes)
            upd = part.become_leader(p, config, self._broker_epoch(), fenced, now)
            for replica in self.leader_moves.became_leader(part.key, p.replicas, self.node_id, now):
                self._wake(("replica", replica))       # its parked fetch names its old partitions
            self._apply(part, upd)
            self.tiering.on_leader(part)
            return
        lost = part.become_follower(p.leader, p.leader_epoch)
        if lost is not None:
            self._apply(part, lost)
            self.notify_changed(part)   # parked fetches of it learn at once that it moved
        if p.leader >= 0:
            if self.fetchers.become_follower(id_key, p.leader, p.leader_epoch, part.follower_view(),
                                            self.tiering.topic_tiering(part)):
                log.info("%s-%d: following %d at epoch %d", part.topic, part.index, p.leader, p.leader_epoch)
                self.tiering.on_follower(part)
        else:
            self.fetchers.stop_following(id_key)

    def _eligible_bytes(self, image: MetadataImage, part: Partition) -> int:
        """Effective ``leader.election.eligible.local.log.bytes`` (topic > cluster-wide dynamic >
        server.properties): the leader reports a size crossing it (``local_log_report``)."""
        value = image.config(ELIGIBLE_BYTES, image.topics.get(part.topic), self.topic_defaults.get(ELIGIBLE_BYTES, -1))
        try:
            return int(value)
        except (TypeError, ValueError):
            return -1

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
        if outcome.appended:
            self._apply(part, outcome.update)
            self.notify_changed(part)
        return outcome

    def on_follower_fetch(self, part: Partition, replica_id: int, fetched: SessionPartition, replica_epoch: int) -> int:
        """A follower's fetch of ``part`` at ``fetched`` (its position, log start and KIP-1303 local log):
        the partition's follower state learns it; the error (NOT_LEADER_OR_FOLLOWER: not a replica)."""
        upd = part.on_follower_fetch(replica_id, fetched.fetch_offset, self._clock_ms(), replica_epoch,
                                     fetched.log_start_offset, fetched.local_log_start_timestamp,
                                     fetched.local_log_size_bytes)
        if upd is None:
            return 0
        self.leader_moves.fetched(replica_id, part.key)
        self._apply(part, upd)
        return upd.error

    def _apply(self, part: Partition, upd: PartitionUpdate) -> None:
        """Carry out what a partition call changed: answer its completed waiters, wake fetches parked
        on a moved high watermark, send its AlterPartition; a leader is visited by the next tick."""
        if upd.acks or upd.deletes:
            _answer(upd.acks, upd.deletes)
        if not part.is_leader:
            return
        self._active.add(part.key)
        if upd.hw_advanced:
            self.notify_changed(part, records=False)
        if upd.alter_partition is not None:
            self._tasks.spawn(self._alter_partition(part, upd.alter_partition),
                              name=f"alter-partition-{part.topic}-{part.index}")

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

    async def _alter_partition(self, part: Partition, item: AlterPartitionItem) -> None:
        log.info("%s-%d: AlterPartition %s isr %s", part.topic, part.index, item.reason, list(item.isr_ids))
        try:
            error, answer = await self._alter_sender.send(item)
        except Exception as e:     # noqa: BLE001 - any failure: retry after a backoff
            log.info("%s-%d: AlterPartition failed: %s", part.topic, part.index, e)
            part.on_alter_partition_failure(item, self._clock_ms())
            return
        if error == ErrorCode.NONE and item.reason in self.isr_changes:
            self.isr_changes[item.reason] += 1
        upd = part.on_alter_partition_response(item, error, answer.get("LeaderEpoch", -1),
                                               answer.get("PartitionEpoch", -1), tuple(answer.get("Isr", ())),
                                               self._clock_ms())
        if upd is not None:
            self._apply(part, upd)

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.tick(self._clock_ms())
            except Exception:
                log.exception("replication tick failed")

    def tick(self, now: int) -> None:
        """Expire parked requests, check ISR shrinks and expands, retry AlterPartition, report local
        logs (KIP-1303): for the *active* led partitions (anything happened since they were last
        quiet) and a slice of the others, so every one is visited once per ``SWEEP_MS``."""
        if now - self._last_hw_checkpoint_ms >= self._hw_checkpoint_interval_ms:
            self.checkpoint_high_watermarks()
        keys = self._active.union(self._sweep.take(self.partitions))
        for key in keys:
            part = self.partitions.get(key)
            if part is None or not part.is_leader or part.offline:     # offline: mark_offline is due
                self._active.discard(key)
                continue
            self._apply(part, part.tick(now))
            if part.quiet:
                self._active.discard(key)
            elif not part.isr_complete:
                # a follower outside the ISR may join once its fetch is read again (ISR expand)
                self.fetch_sessions.mark_changed(((part.topic_id, part.index), part.key), wake=False)

    # -- appends and long polls -------------------------------------------------
    def notify_changed(self, part: Partition, records: bool = True) -> None:
        """``part`` has news for fetchers (records, its high watermark or log start moved, leadership
        lost): wake sessionless fetches parked on it and mark it in the fetch sessions holding it
        (without ``records``, a watermark or log start move, followers' sessions are not woken)."""
        self._wake(part.key)
        self.fetch_sessions.mark_changed(((part.topic_id, part.index), part.key), records=records)

    def on_replica_fetch(self, replica_id: int) -> None:
        """A follower's Fetch arrived: every partition of its session is fetched as of now."""
        self._replica_fetch_ms[replica_id] = self._clock_ms()

    def _wake(self, key) -> None:
        for fut in self._watchers.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def must_answer_now(self, replica_id: int, holds: Callable[[tuple[str, int]], bool]) -> bool:
        """Whether a follower's fetch lacks a partition that just moved here (``LeaderMoves``);
        ``holds(key)``: the fetch (its session) has partition ``key``."""
        return self.leader_moves.must_answer_now(replica_id, holds, self._clock_ms())

    async def wait_for_data(self, keys: Iterable[tuple[str, int]], timeout_s: float, replica_id: int = -1,
                            view=None) -> None:
        """Return when a partition of the fetch session ``view`` (without one: any of ``keys``) has
        news, a partition ``replica_id`` follows moves here, or after ``timeout_s``."""
        fut = asyncio.get_running_loop().create_future()
        keys = [] if view is not None and view.park(fut) else list(keys)
        keys += [("replica", replica_id)] if replica_id >= 0 else []
        for k in keys:
            self._watchers.setdefault(k, set()).add(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            pass
        finally:
            for k in keys:
                s = self._watchers.get(k)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._watchers[k]


def _answer(acks, deletes):
    """Answer the waiters a partition completed (futures of this loop): acks=all with its error code,
    DeleteRecords with (error, low watermark)."""
    for c in acks:
        if not c.token.done():
            c.token.set_result(c.error)
    for d in deletes:
        if not d.token.done():
            d.token.set_result((d.error, d.low_watermark))
