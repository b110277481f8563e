"""All partition logs of a node, across its log directories (Kafka's LogManager).

Per log directory, as Kafka keeps them:

- ``<topic>-<partition>/`` one directory per partition log;
- ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``
  (version 0, count, ``topic partition offset`` lines), written every
  ``checkpoint_interval_ms`` by ``tick``, by ``flush_all`` and on close;
- ``replication-offset-checkpoint`` (same format): the high watermarks, written by
  the replica manager through ``write_high_watermarks`` (read once at start,
  ``checkpointed_high_watermark``);
- ``.kafka_cleanshutdown`` written last on close and removed at start: when present
  at start the logs skip recovery;
- ``cleaner-offset-checkpoint``: each compacted log's first dirty offset, written by
  the directory's log cleaner thread (``cleaner_threads``; started by
  ``start_cleaners(clean_limits_of)`` when a ``CleanerConfig`` was given, stopped on
  close or when the directory goes offline). ``clean_limits_of`` gives the cleaner
  threads the logs' last stable offsets and must be thread-safe: the broker's is
  ``broker/clean_limits.CleanLimits.limits_of``, which reads on the event loop.

Each log directory has one writer thread (``DirWriter``) for its background disk
syncs: the logs' time-driven flushes (after a roll, flush.ms), the fsyncs of
newly created logs (``create`` writes their files unsynced, so one metadata commit
creating thousands of partitions costs the event loop no fsync), and the three
checkpoint files above, whose contents are snapshotted on the caller's thread
(the event loop) and written on the writer, in order. ``flush_all`` and ``close``
wait for them.

Log directory failure (Kafka's JBOD handling): an I/O error anywhere in a log
directory (an append, a flush, a checkpoint: ``ENOSPC``, ``EIO``...) is reported
to the manager's ``LogDirFailureChannel``; the next ``tick`` (or
``wait_for_writes``, ``flush_all``) takes that directory offline: its logs are
closed and dropped, nothing more is written there, no new log is placed there,
its cleaner stops, and ``on_dir_offline(log_dir)`` tells the node (which reports
it to the controller and shuts down once every directory failed). A directory
stays offline until the node restarts.

Closed segments are CRC-checked in the background (``SegmentVerifier``, at most
``verify_bytes_per_second``, in ``tick``); each bad batch found is logged at
ERROR and handed to ``on_corrupt`` (a follower truncates there and fetches
again).

Deleting a partition renames its directory to
``<topic>-<partition>.<32 hex>-delete``; its descriptors close and the directory
is removed after file.delete.delay.ms (in ``tick``), so fetch regions already
handed out stay readable. Leftover ``-delete`` directories are removed at start.

An I/O error while loading a log directory takes that directory offline (listed
in ``offline_dirs``); the other directories keep working.

Future logs (AlterReplicaLogDirs, moving a replica to another log dir of this
node): ``create_future`` opens ``<topic>-<partition>.<32 hex>-future`` in the
target dir, kept apart from the current logs (no retention, cleaning or
checkpoints; the partition fills it, ``broker.partition.future_log``);
``replace_current_with_future`` renames it to ``<topic>-<partition>`` and the old
current to ``-delete`` (removed after file.delete.delay.ms), in that order, so a
crash between leaves two complete copies (the duplicate stops the load, as in
Kafka) and never none. ``abort_future`` deletes it. A future log found at start
is loaded again (``futures``: the partition resumes the move, as Kafka's broker
does) unless its partition has no current log here, then it is removed; one
whose dir (or whose current log's dir) goes offline is dropped: the move is
aborted.

``reserved_dirs``: directories the node uses for something else (the Raft
metadata log, ``__cluster_metadata-0``, whose name is a legal partition directory
name, as in Kafka). The manager never loads, creates or deletes a log there,
whatever topic name maps to it: ``create`` raises KafkaStorageError instead.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from tierlog.clock import wall_clock_ms
from tierlog.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from tierlog.storage.cleaner_threads import CleanerConfig, LogDirCleaner
from tierlog.storage.dir_checkpoints import CLEAN_SHUTDOWN_FILE, CheckpointFiles, read_dir_state, read_high_watermarks
from tierlog.storage.dir_failure import LogDirFailureChannel
from tierlog.storage.dir_writer import DirWriter
from tierlog.storage.errors import KafkaStorageError
from tierlog.storage.files import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    atomic_write,
    fsync_dir,
    fsync_path,
    parse_partition_dir,
    partition_dir_name,
)
from tierlog.storage.log import Log
from tierlog.storage.log_config import LogConfig
from tierlog.storage.partition_metadata import PARTITION_METADATA_FILE
from tierlog.storage.segment_verifier import Corruption, SegmentVerifier
from tierlog.storage.timed_work import TimedWorkInbox

__all__ = ["CLEAN_SHUTDOWN_FILE", "LogManager"]

METADATA_LOG_DIR = "__cluster_metadata-0"   # Kafka's name; see tierlog.raft.file_log
_log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class LogManager:
    """Opens, creates, deletes and services the logs of every log directory."""

    def __init__(
        self,
        log_dirs: list[Path],
        now_ms: int,
        retention_check_interval_ms: int = 300000,
        *,
        checkpoint_interval_ms: int = 60000,
        config_for: Callable[[str], LogConfig] | None = None,
        high_watermark_of: Callable[[TopicPartition], int | None] | None = None,
        cleaner: CleanerConfig | None = None,
        clock_ms: Callable[[], int] | None = None,
        reserved_dirs: Iterable[Path] = (),
        on_dir_offline: Callable[[Path], None] = lambda _dir: None,
        verify_bytes_per_second: int = 0,
        on_corrupt: Callable[[Corruption], None] = lambda _c: None,
    ) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self._reserved = frozenset(_identity(Path(d)) for d in reserved_dirs)
        self.retention_check_interval_ms = retention_check_interval_ms
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self.offline_dirs: set[Path] = set()
        self._config_for = config_for or (lambda _topic: LogConfig())
        self._high_watermark_of = high_watermark_of or (lambda _tp: None)
        self._logs: dict[TopicPartition, Log] = {}
        self._home: dict[TopicPartition, Path] = {}
        self._futures: dict[TopicPartition, Log] = {}       # AlterReplicaLogDirs: the logs being filled
        self._future_home: dict[TopicPartition, Path] = {}
        self._checkpointed_hw: dict[TopicPartition, int] = {}
        self._hw_files_stale: set[Path] = set()    # dirs whose replication-offset-checkpoint would change
        self._inbox: TimedWorkInbox[TopicPartition] = TimedWorkInbox(now_ms)   # logs saying they have time-driven work
        self._timed: set[TopicPartition] = set()      # the logs a tick visits (timed_work)
        self._pending_dir_deletes: list[tuple[int, Log]] = []
        self._writers = {log_dir: DirWriter(log_dir) for log_dir in self.log_dirs}
        self._unsynced: dict[Path, list[Path]] = {}   # log dir -> partition dirs created, not yet fsynced
        self._unsynced_lock = threading.Lock()        # not _lock: close() holds that while it waits for the writer
        self.failures = LogDirFailureChannel()   # I/O errors of any thread, drained by _take_failed_offline
        self._checkpoint_files = CheckpointFiles(self.failures)    # written on the dirs' writers
        self._on_dir_offline = on_dir_offline
        self._verifier = SegmentVerifier(verify_bytes_per_second)
        self._on_corrupt = on_corrupt
        self._last_verify_ms = now_ms
        self._lock = threading.RLock()
        self._now_ms = now_ms
        self._last_retention_ms = now_ms
        self._last_checkpoint_ms = now_ms
        self._cleaner_config = cleaner
        self._cleaner_clock_ms = clock_ms or wall_clock_ms
        self.cleaners: dict[Path, LogDirCleaner] = {}     # start_cleaners; a dir going offline at load has none
        for log_dir in self.log_dirs:
            self._load_dir(log_dir, now_ms)
        for key in [k for k in self._futures if k not in self._logs]:
            _log.info("%s-%d: removing a future log without a current log", *key)
            self.abort_future(*key)
        self._write_checkpoints(wait=True)

    def start_cleaners(self, clean_limits_of: Callable[[list[TopicPartition]],
                                                       Mapping[TopicPartition, int | None]]) -> None:
        """One log cleaner thread per online log directory (none when disabled or not configured),
        cleaning each log below ``clean_limits_of(keys)[key]`` (None or absent: no limit but the
        active segment). It is called on the cleaner threads, so it must be thread-safe. Once only."""
        config = self._cleaner_config
        if config is None or not config.active or self.cleaners:
            return
        online = self._online_dirs()
        share = config.dedupe_buffer_size // max(1, len(online))
        for log_dir in online:
            cleaner = LogDirCleaner(log_dir, functools.partial(self._logs_in, log_dir), clean_limits_of,
                                    config, self._cleaner_clock_ms, share)
            cleaner.start()
            self.cleaners[log_dir] = cleaner

    def _logs_in(self, log_dir: Path) -> dict[TopicPartition, Log]:
        with self._lock:
            return {key: log for key, log in self._logs.items() if self._home.get(key) == log_dir}

    # --- startup -------------------------------------------------------------------------------

    def _load_dir(self, log_dir: Path, now_ms: int) -> None:
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
            clean, recovery_points, start_offsets = read_dir_state(log_dir)
            high_watermarks = read_high_watermarks(log_dir)
            for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
                self._load_entry(log_dir, entry, now_ms, clean, recovery_points, start_offsets)
            self._checkpointed_hw.update(
                (key, hw) for key, hw in high_watermarks.items() if self._home.get(key) == log_dir)
            (log_dir / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
            fsync_dir(log_dir)
        except (OSError, KafkaStorageError) as exc:
            _log.error("log directory %s is offline: %s", log_dir, exc)
            self._take_offline(log_dir)

    def _load_entry(self, log_dir: Path, entry: os.DirEntry, now_ms: int, clean: bool,
                    recovery_points: dict[TopicPartition, int], start_offsets: dict[TopicPartition, int]) -> None:
        if not entry.is_dir():
            return
        if entry.name.endswith(DELETE_DIR_SUFFIX):
            shutil.rmtree(entry.path, ignore_errors=True)
            return
        if entry.name.endswith(FUTURE_DIR_SUFFIX):
            self._load_future(log_dir, entry, now_ms)
            return
        key = parse_partition_dir(entry.name)
        if key is None or entry.name == METADATA_LOG_DIR or self._is_reserved(Path(entry.path)):
            return          # the Raft replica owns the metadata log
        if key in self._logs:
            raise KafkaStorageError(f"duplicate log directories for {key}: {self._home[key]} and {log_dir}")
        # A log the start checkpoint does not name yet (it is written every checkpoint_interval_ms:
        # a broker killed before its first write) starts at 0, as in Kafka, not at its first local
        # segment: a tiered log's older offsets are in remote storage, and as leader its remote
        # expiration would delete every remote segment below that start (issue 40's lost records).
        # The topic's config, once the metadata brings it, raises it for a topic that is not tiered.
        log = Log.open(
            Path(entry.path), self._config_for(key[0]), now_ms,
            recovery_point=recovery_points.get(key), log_start_offset=start_offsets.get(key, 0),
            clean_shutdown=clean and key in recovery_points, writer=self._writers[log_dir], failures=self.failures,
            timed=self._inbox.for_log(key),
        )
        self._logs[key] = log
        self._home[key] = log_dir
        self._timed.add(key)

    def _load_future(self, log_dir: Path, entry: os.DirEntry, now_ms: int) -> None:
        """A future log left by a move under way at shutdown: loaded (fully recovered) to be resumed."""
        key = parse_partition_dir(entry.name.rpartition(".")[0])
        if key is None or key in self._futures:
            shutil.rmtree(entry.path, ignore_errors=True)
            return
        self._futures[key] = Log.open(Path(entry.path), self._config_for(key[0]), now_ms,
                                      writer=self._writers[log_dir], failures=self.failures,
                                      timed=self._inbox.for_log(key))
        self._future_home[key] = log_dir
        _log.info("%s-%d: resuming the move to %s (future log at offset %d)", key[0], key[1], log_dir,
                  self._futures[key].log_end_offset)

    def _take_offline(self, log_dir: Path) -> None:
        if log_dir in self.offline_dirs:
            return
        self.offline_dirs.add(log_dir)
        cleaner = self.cleaners.pop(log_dir, None)
        if cleaner is not None:
            cleaner.stop(wait=False)        # it may be waiting for this manager's lock
        for key in [k for k, home in self._home.items() if home == log_dir]:
            log = self._logs.pop(key)
            del self._home[key]
            log.close_handlers()        # nothing more is written to a failed dir (other logs there would fail too)
            self._drop_future(key)      # its move is aborted: nothing to copy from
        for key in [k for k, home in self._future_home.items() if home == log_dir]:
            _log.error("%s-%d: moving to %s aborted: the log dir is offline", key[0], key[1], log_dir)
            self._drop_future(key)
        _log.error("log directory %s is offline; %d of %d log directories remain online",
                   log_dir, len(self._online_dirs()), len(self.log_dirs))
        self._on_dir_offline(log_dir)

    # --- lookup and lifecycle -----------------------------------------------------------------

    def get(self, topic: str, partition: int) -> Log | None:
        with self._lock:
            return self._logs.get((topic, partition))

    def logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        with self._lock:
            return self._home.get((topic, partition))

    # --- future logs (AlterReplicaLogDirs) ---------------------------------------------------------

    def online_dir(self, path: str) -> Path | None:
        """The configured log dir spelt ``path`` (absolute: Kafka compares absolute paths), else None;
        an offline one raises KafkaStorageError."""
        asked = {path, os.path.normpath(path)} if "\0" not in path else {path}
        for log_dir in self.log_dirs:
            if asked & {str(log_dir.absolute()), str(_identity(log_dir))}:
                if log_dir in self.offline_dirs:
                    raise KafkaStorageError(f"log dir {path} is offline")
                return log_dir
        return None

    def future_of(self, topic: str, partition: int) -> Log | None:
        with self._lock:
            return self._futures.get((topic, partition))

    def future_dir_of(self, topic: str, partition: int) -> Path | None:
        with self._lock:
            return self._future_home.get((topic, partition))

    def futures(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._futures)

    def create_future(self, topic: str, partition: int, log_dir: Path, now_ms: int) -> Log:
        """An empty future log of a current log in ``log_dir`` (another online dir); one in another
        dir is deleted first."""
        with self._lock:
            key = (topic, partition)
            current = self._logs.get(key)
            if current is None:
                raise KafkaStorageError(f"{topic}-{partition} has no log here")
            if self._future_home.get(key) == log_dir:
                return self._futures[key]
            self.abort_future(topic, partition)
            path = log_dir / f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"
            try:
                future = Log.open(path, current.config, now_ms, current.topic_id, writer=self._writers[log_dir],
                                  failures=self.failures, timed=self._inbox.for_log(key))
            except OSError as exc:
                self.failures.report(log_dir, f"creating {path.name}: {exc}")
                self._take_failed_offline()
                raise KafkaStorageError(f"cannot create {path}: {exc}") from exc
            self._futures[key] = future
            self._future_home[key] = log_dir
            return future

    def abort_future(self, topic: str, partition: int) -> bool:
        """Delete the partition's future log now (the move is cancelled); False if there is none."""
        with self._lock:
            key = (topic, partition)
            future = self._futures.pop(key, None)
            self._future_home.pop(key, None)
            if future is None:
                return False
            future.delete()
            return True

    def _drop_future(self, key: TopicPartition) -> None:
        future = self._futures.pop(key, None)
        self._future_home.pop(key, None)
        if future is not None:
            future.close_handlers()     # its dir may be failed: left for the next start to remove

    def replace_current_with_future(self, topic: str, partition: int) -> Log:
        """The future log becomes the partition's log in its dir; the old one is renamed for deletion
        (removed after file.delete.delay.ms, so reads already handed out stay valid).  The caller
        (``Partition.swap_future``) has made the future complete.  Returns the new current log."""
        with self._lock:
            key = (topic, partition)
            future, target = self._futures[key], self._future_home[key]
            old, old_dir = self._logs[key], self._home[key]
            try:
                future.flush(self._now_ms)
                future.rename_dir(target / partition_dir_name(topic, partition))
                fsync_dir(target)
            except OSError as exc:
                self.failures.report(target, f"moving {topic}-{partition} here: {exc}")
                raise KafkaStorageError(f"cannot make the future log of {topic}-{partition} current: {exc}") from exc
            del self._futures[key], self._future_home[key]
            self._logs[key], self._home[key] = future, target
            self._timed.add(key)
            self._hw_files_stale.update((old_dir, target))
            try:
                old.rename_dir(old_dir / f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
                fsync_dir(old_dir)
            except OSError as exc:
                self.failures.report(old_dir, f"deleting the moved log of {topic}-{partition}: {exc}")
                return future
            self._pending_dir_deletes.append((self._now_ms + old.config.file_delete_delay_ms, old))
            self._write_checkpoints(wait=False)
            return future

    def create(self, topic: str, partition: int, topic_id: bytes | None, config: LogConfig, now_ms: int) -> Log:
        """The partition's log, created in the least loaded online log directory if new.

        An existing log recorded under another topic id raises InconsistentTopicIdError.
        """
        with self._lock:
            key = (topic, partition)
            existing = self._logs.get(key)
            if existing is not None:
                if topic_id is not None:
                    existing.assign_topic_id(topic_id)
                return existing
            log_dir = self._least_loaded_dir()
            path = log_dir / partition_dir_name(topic, partition)
            if self._is_reserved(path):
                raise KafkaStorageError(f"{path} is reserved by this node; no partition log may live there")
            try:
                log = Log.open(path, config, now_ms, topic_id, writer=self._writers[log_dir],
                               failures=self.failures, sync_new=False, timed=self._inbox.for_log(key))
            except OSError as exc:
                self.failures.report(log_dir, f"creating {path.name}: {exc}")
                self._take_failed_offline()
                raise KafkaStorageError(f"cannot create {path}: {exc}") from exc
            self._sync_later(log_dir, path)
            self._logs[key] = log
            self._home[key] = log_dir
            self._hw_files_stale.add(log_dir)
            self._timed.add(key)
            return log

    def _sync_later(self, log_dir: Path, partition_dir: Path) -> None:
        """Make a new log durable on ``log_dir``'s writer thread, with the others created meanwhile.

        Creating thousands of partitions at once (one metadata commit) then costs the event
        loop no fsync: the writer syncs each new log's files and directory, then ``log_dir``
        once for the lot. Data appended meanwhile is made durable by the log's own flush.
        """
        with self._unsynced_lock:
            pending = self._unsynced.setdefault(log_dir, [])
            pending.append(partition_dir)
            first = len(pending) == 1
        if first:
            self._writers[log_dir].submit(self._sync_created, log_dir)

    def _sync_created(self, log_dir: Path) -> None:
        """On ``log_dir``'s writer: fsync the logs created since the last call; a failure marks the dir."""
        with self._unsynced_lock:
            created = self._unsynced.pop(log_dir, [])
        try:
            for partition_dir in created:
                _sync_new_log(partition_dir)
            fsync_dir(log_dir)
        except OSError as exc:
            self.failures.report(log_dir, f"syncing new logs: {exc}")

    def _is_reserved(self, path: Path) -> bool:
        return _identity(path) in self._reserved

    def _least_loaded_dir(self) -> Path:
        online = [d for d in self.log_dirs if d not in self.offline_dirs]
        if not online:
            raise KafkaStorageError("no online log directory")
        if len(online) == 1:
            return online[0]
        counts = {d: 0 for d in online}
        for home in self._home.values():
            if home in counts:
                counts[home] += 1
        return min(online, key=lambda d: counts[d])

    def delete(self, topic: str, partition: int, now_ms: int | None = None) -> bool:
        """Rename the log's directory for deletion; removed after file.delete.delay.ms."""
        with self._lock:
            key = (topic, partition)
            log = self._logs.pop(key, None)
            self._checkpointed_hw.pop(key, None)
            self.abort_future(topic, partition)
            if log is None:
                return False
            log_dir = self._home.pop(key)
            self._hw_files_stale.add(log_dir)
            now = self._now_ms if now_ms is None else now_ms
            target = log_dir / f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
            log.rename_dir(target)
            fsync_dir(log_dir)
            self._pending_dir_deletes.append((now + log.config.file_delete_delay_ms, log))
            return True

    # --- high watermarks (replication-offset-checkpoint) -----------------------------------------

    def checkpointed_high_watermark(self, topic: str, partition: int) -> int:
        """The last checkpointed high watermark of an open log, capped at its log end offset; 0 if none."""
        with self._lock:
            key = (topic, partition)
            log = self._logs.get(key)
            if log is None:
                return 0
            return max(0, min(self._checkpointed_hw.get(key, 0), log.log_end_offset))

    def write_high_watermarks(self, high_watermarks: dict[TopicPartition, int]) -> None:
        """Queue ``replication-offset-checkpoint`` for each online log directory whose file would
        change (written on its writer thread: tmp + fsync + rename); returns at once.

        ``high_watermarks`` holds the values that may have moved (the replica manager's changes);
        a log missing from it keeps its previously checkpointed value.  Each file lists the open
        logs of its directory, so a log created or deleted there rewrites it too.
        """
        with self._lock:
            for key, hw in high_watermarks.items():
                home = self._home.get(key)
                if home is not None and self._checkpointed_hw.get(key) != hw:
                    self._checkpointed_hw[key] = hw
                    self._hw_files_stale.add(home)
            for log_dir in self._online_dirs():
                if log_dir not in self._hw_files_stale:
                    continue
                hws = {key: self._checkpointed_hw[key] for key, home in self._home.items()
                       if home == log_dir and key in self._checkpointed_hw}
                self._writers[log_dir].submit(self._checkpoint_files.write, log_dir, [(REPLICATION_OFFSET_CHECKPOINT, hws)])
            self._hw_files_stale.clear()

    def take_failed_offline(self) -> None:
        """Take the directories reported failed offline now, not at the next ``tick``."""
        with self._lock:
            self._take_failed_offline()

    def wait_for_writes(self) -> None:
        """Wait for every queued background write; take directories that failed offline."""
        for writer in self._writers.values():
            writer.drain()
        with self._lock:
            self._take_failed_offline()

    # --- periodic work --------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Per-log time policies (of the logs with time-driven work only: ``timed_work``),
        retention every interval, checkpoints, delayed deletes."""
        with self._lock:
            self._now_ms = self._inbox.now_ms = now_ms
            self._take_failed_offline()
            self._tick_timed(now_ms)
            if now_ms - self._last_retention_ms >= self.retention_check_interval_ms:
                self._last_retention_ms = now_ms
                for key, log in list(self._logs.items()):
                    self._guarded(key, log.enforce_retention, now_ms, self._high_watermark_of(key))
            if now_ms - self._last_checkpoint_ms >= self.checkpoint_interval_ms:
                self._write_checkpoints(wait=False)
            self._delete_due_dirs(now_ms)
            self._verify_segments(now_ms)

    def _tick_timed(self, now_ms: int) -> None:
        timed = self._timed
        timed |= self._inbox.take()
        for key in list(timed):
            log = self._logs.get(key)
            if log is None:
                timed.discard(key)
                continue
            if log.tick_due(now_ms):
                self._guarded(key, log.tick, now_ms)
            if not log.has_timed_work:
                timed.discard(key)

    def _verify_segments(self, now_ms: int) -> None:
        elapsed, self._last_verify_ms = now_ms - self._last_verify_ms, now_ms
        if self._verifier.bytes_per_second <= 0:
            return
        for bad in self._verifier.step(dict(self._logs), elapsed):
            _log.error("%s-%d: corrupt batch in closed segment %d at position %d (%s); offsets from %d on "
                       "are not trusted", bad.key[0], bad.key[1], bad.segment_base, bad.position, bad.error,
                       bad.offset)
            self._on_corrupt(bad)

    def flush_all(self, now_ms: int) -> None:
        with self._lock:
            self._now_ms = now_ms
            for key, log in list(self._logs.items()):
                self._guarded(key, log.flush, now_ms)
            self._write_checkpoints(wait=True)

    def close(self) -> None:
        """Flush, checkpoint, close every log, then mark each log directory cleanly shut down."""
        for cleaner in list(self.cleaners.values()):    # outside the lock: a clean under way may need it
            cleaner.stop()
        self.cleaners = {}
        with self._lock:
            self.flush_all(self._now_ms)
            for key, log in list(self._logs.items()):
                self._guarded(key, log.close)
            for key in list(self._futures):
                self._drop_future(key)          # removed at the next start
            for _when, log in self._pending_dir_deletes:
                log.delete()
            self._pending_dir_deletes = []
            for writer in self._writers.values():
                writer.close()
            self._take_failed_offline()
            for log_dir in self.log_dirs:
                if log_dir not in self.offline_dirs:
                    atomic_write(log_dir / CLEAN_SHUTDOWN_FILE, b'{"version":0,"brokerEpoch":-1}')
            self._logs.clear()
            self._home.clear()

    def _guarded(self, key: TopicPartition, action: Callable, *args) -> None:
        """Run ``action``; a storage error takes the log's whole directory offline (like Kafka)."""
        if key not in self._home:
            return
        if self._logs[key].offline:     # a background flush failed
            self._take_offline(self._home[key])
            return
        try:
            action(*args)
        except KafkaStorageError as exc:
            _log.error("log %s-%s failed, taking %s offline: %s", key[0], key[1], self._home[key], exc)
            self._take_offline(self._home[key])

    def _write_checkpoints(self, wait: bool) -> None:
        """Recovery points and log start offsets of each online directory's logs, snapshotted
        here, written on the directory's writer (``wait``: and waited for)."""
        self._last_checkpoint_ms = self._now_ms
        for log_dir in self._online_dirs():
            logs = {key: log for key, log in self._logs.items() if self._home[key] == log_dir}
            files = [(RECOVERY_POINT_CHECKPOINT, {k: log.recovery_point for k, log in logs.items()}),
                     (LOG_START_OFFSET_CHECKPOINT, {k: log.log_start_offset for k, log in logs.items()})]
            written = self._writers[log_dir].submit(self._checkpoint_files.write, log_dir, files)
            if wait:
                written.result()
        if wait:
            self._take_failed_offline()

    def _take_failed_offline(self) -> None:
        for log_dir in self.failures.take():
            self._take_offline(log_dir)

    def _online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def _delete_due_dirs(self, now_ms: int) -> None:
        due = [log for when, log in self._pending_dir_deletes if when <= now_ms]
        if due:
            self._pending_dir_deletes = [(w, log) for w, log in self._pending_dir_deletes if w > now_ms]
            for log in due:
                log.delete()


def _sync_new_log(partition_dir: Path) -> None:
    """fsync what ``Log.open(sync_new=False)`` wrote (a log deleted since then is skipped)."""
    try:
        if (partition_dir / PARTITION_METADATA_FILE).exists():
            fsync_path(partition_dir / PARTITION_METADATA_FILE)
        fsync_dir(partition_dir)
    except FileNotFoundError:
        return


def _identity(path: Path) -> Path:
    """One spelling per directory (absolute, symlinks and ``..`` resolved), existing or not."""
    return path.resolve()
