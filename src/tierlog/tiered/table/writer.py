"""One uploaded segment into its topic's Iceberg table: Parquet through the object store, one commit.

``TableWriter.commit_segment`` (on a copier thread, after the segment's objects are
verified and before its COPY_SEGMENT_FINISHED; docs/tables.md):

1. open the topic's table (and dead-letter table for ``value_json``), creating or
   evolving it (kept open between segments: ``TableCatalog.table(cached=True)``);
2. read what each table already covers for the partition (``tierlog.last-offset.<p>``):
   a segment wholly covered is done (a retry, or a new leader re-uploading what the
   old one committed before it died);
3. the committed records above that offset (``rows.committed_batches``) into Parquet
   files in ``<log dir>/table-staging``, row groups of ``ROW_GROUP_RECORDS``, each
   put into the store at ``tierlog-tables/<dir>/<topic>/data/partition=<p>/<20-digit
   start>-<segment id>.parquet`` and verified (size and CRC-32C) like segment objects;
4. the dead-letter table's commit, then the table's: the files appended and the partition's
   ``tierlog.last-offset.<p>`` in one Iceberg commit, the summary carrying the segment;
   segments of other partitions of the topic that are ready at the same time go into
   the same commits (``group_commit.CommitQueue``), each still checked against what
   the table covers for its partition.

Idempotent by offset: a crash before step 4 leaves an unreferenced Parquet object
(the retry writes its own); a crash between the two commits or after them makes the
retry skip what is covered. So a table never holds an offset twice and, since the
segment counts as uploaded only after this returns, never misses one the log has
uploaded. ``TIERLOG_TEST_TABLE_CRASH_DIR`` (tests only) kills the process with SIGKILL
once at each crash point (``before-commit``, ``after-commit``).
"""

from __future__ import annotations

import mmap
import os
import random
import signal
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table

from tierlog.storage.table_config import (
    TABLE_MODE,
    TABLE_VALUE_SCHEMA,
    VALUE_JSON,
    parse_value_schema,
)
from tierlog.storage.txn_index import AbortedTxn
from tierlog.tiered.object_store import ObjectStore, RemoteStorageError
from tierlog.tiered.segment_store import UploadVerificationError, file_checksum

from .arrow import ROW_GROUP_RECORDS, RowGroups, dead_letter_schema, parquet_options, table_schema
from .catalog import (
    LAST_OFFSET_PREFIX,
    LOG_START_PREFIX,
    TABLE_PROPERTIES,
    WAREHOUSE_KEY,
    TableCatalog,
    covered_offsets,
    store_uri,
)
from .data_files import WrittenFile, append_written
from .group_commit import CommitQueue, Pending, plan_commit
from .maintenance import expire_snapshots, remove_orphans
from .rows import committed_batches
from .transaction import transaction

__all__ = ["COMMIT_ATTEMPTS", "CRASH_DIR_ENV", "HANDOFF_WAIT_S", "SegmentCommit", "TableStats", "TableWriter"]

CRASH_DIR_ENV = "TIERLOG_TEST_TABLE_CRASH_DIR"
COMMIT_ATTEMPTS = 8     # races lost to other partitions' commits before the upload fails (and is retried)
HANDOFF_WAIT_S = 600.0  # how long a segment waits for the one before it to be queued (it always is, or fails)


@dataclass(frozen=True, slots=True)
class SegmentCommit:
    """What the writer needs of one uploaded segment."""

    topic: str
    partition: int
    segment_id: uuid.UUID
    start_offset: int           # inclusive
    end_offset: int             # inclusive
    log_path: Path
    aborted: Sequence[AbortedTxn]
    mode: str
    value_schema: str = ""

    @classmethod
    def of(cls, topic: str, partition: int, segment_id: bytes, start: int, end: int, log_path: Path,
           aborted: Sequence[AbortedTxn], topic_config: Mapping[str, Any]) -> SegmentCommit:
        return cls(topic, partition, uuid.UUID(bytes=segment_id), start, end, log_path, aborted,
                   topic_config[TABLE_MODE], topic_config[TABLE_VALUE_SCHEMA])


@dataclass
class TableStats:
    """Counters of this broker's table commits (exported on /metrics)."""

    commits: dict[str, int] = field(default_factory=dict)
    bytes_written: dict[str, int] = field(default_factory=dict)
    dead_letters: dict[str, int] = field(default_factory=dict)
    covered: dict[tuple[str, int], int] = field(default_factory=dict)     # the last offset each table covers
    expired: dict[tuple[str, int], int] = field(default_factory=dict)     # the log start each table was cut at

    lock: threading.Lock = field(default_factory=threading.Lock)     # copier threads add at once

    def add(self, topic: str, commits: int, size: int, dead: int) -> None:
        with self.lock:
            for counter, n in ((self.commits, commits), (self.bytes_written, size), (self.dead_letters, dead)):
                counter[topic] = counter.get(topic, 0) + n


class TableWriter:
    def __init__(self, store: ObjectStore, catalog: TableCatalog, staging_dir: Path) -> None:
        self.store, self.catalog, self.staging_dir = store, catalog, staging_dir
        self.stats = TableStats()
        self._queues: dict[str, CommitQueue[_Ready, None]] = {}     # per topic: its segments' group commits
        self._queues_lock = threading.Lock()

    def commit_segment(self, seg: SegmentCommit, behind: threading.Event | None = None,
                       handoff: threading.Event | None = None) -> None:
        """Commit ``seg`` to its table(s); RemoteStorageError when it cannot (the upload is then retried).

        ``behind``: the segment ending just before ``seg`` is being uploaded and committed meanwhile
        (``broker/remote/copy_task``'s pipeline); set once that one is in the commit queue (or will
        never be). ``seg``'s file is then written from its start, and queued only after that one:
        the two go in one commit or in order, and ``plan_commit`` refuses ``seg``'s file if that one
        did not land. ``handoff`` is set once ``seg`` is queued (or will never be), for the next."""
        try:
            self._commit(seg, behind, handoff)
        except RemoteStorageError:
            raise
        except Exception as e:
            raise RemoteStorageError(f"{seg.topic}-{seg.partition}: table commit of [{seg.start_offset}, "
                                     f"{seg.end_offset}] failed: {type(e).__name__}: {e}") from e
        finally:
            if handoff is not None:
                handoff.set()

    def covered(self, topic: str, partition: int, mode: str, value_schema: str) -> int:
        """The last offset both of the topic's tables cover for ``partition`` (-1: none yet)."""
        main, dead = self._tables(topic, mode, value_schema)
        covered = min(covered_offsets(t).get(partition, -1) for t in (main, dead) if t is not None)
        if covered >= 0:
            self.stats.covered[(topic, partition)] = covered
        return covered

    def expire(self, topic: str, partition: int, log_start_offset: int, mode: str, value_schema: str) -> int:
        """Delete the rows of ``partition`` below the log start offset from the topic's table(s), in
        one commit each (whole files dropped, a file straddling the start rewritten), and record the
        start (table property ``tierlog.log-start-offset.<p>``); returns the tables changed."""
        changed = 0
        for table in (t for t in self._tables(topic, mode, value_schema) if t is not None):
            key = f"{LOG_START_PREFIX}{partition}"
            if int(table.properties.get(key, -1)) >= log_start_offset:
                continue
            rows = f"partition = {int(partition)} and offset < {int(log_start_offset)}"     # pyiceberg's filter syntax
            with table.transaction() as tx:
                tx.delete(rows, snapshot_properties={key: str(log_start_offset)})
                tx.set_properties({key: str(log_start_offset)})
            changed += 1
        self.stats.expired[(topic, partition)] = log_start_offset
        return changed

    def upkeep(self, topic: str, partition: int, mode: str, value_schema: str, now_ms: int,
               snapshot_retention_ms: int) -> tuple[int, int]:
        """Snapshot expiry (partition 0's leader) and the partition's orphan Parquet objects
        (``maintenance.py``); returns (snapshots expired, objects deleted)."""
        expired = removed = 0
        main, dead = self._tables(topic, mode, value_schema)
        for table, folder in ((main, "topics"), (dead, "dead-letter")):
            if table is None:
                continue
            if partition == 0:
                expired += expire_snapshots(table, now_ms, snapshot_retention_ms)
                table = table.refresh()
            removed += len(remove_orphans(self.store, table, folder, topic, partition))
        return expired, removed

    def _tables(self, topic: str, mode: str, value_schema: str, cached: bool = False) -> tuple[Table, Table | None]:
        schema = parse_value_schema(value_schema) if mode == VALUE_JSON else None
        main = self.catalog.table(topic, table_schema(mode, schema), cached=cached)
        dead = self.catalog.table(topic, dead_letter_schema(), dead_letter=True, cached=cached) \
            if mode == VALUE_JSON else None
        return main, dead

    def _commit(self, seg: SegmentCommit, behind: threading.Event | None,
                handoff: threading.Event | None) -> None:
        schema = parse_value_schema(seg.value_schema) if seg.mode == VALUE_JSON else None
        main, dead = self._tables(seg.topic, seg.mode, seg.value_schema, cached=True)
        main_above = _above(covered_offsets(main).get(seg.partition, -1), seg, behind)
        dead_above = _above(covered_offsets(dead).get(seg.partition, -1), seg, behind) if dead is not None \
            else seg.end_offset
        if min(main_above, dead_above) >= seg.end_offset:
            self.stats.covered[(seg.topic, seg.partition)] = seg.end_offset
            return
        groups = RowGroups(seg.mode, seg.partition, schema)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        files = _Files(self.staging_dir, seg)
        queue = self._queue(seg.topic)
        try:
            with queue.coming() as arrival:     # a group committed meanwhile waits (briefly) for this file
                self._write(seg, groups, files, main_above, dead_above)
                main_file, dead_file = files.upload(self.store)
                _crash_point("before-commit")
                ready = _Ready(seg, _pending(seg, main_above, main_file),
                               _pending(seg, dead_above, dead_file) if dead is not None else None)
                if behind is not None:  # a timeout: plan_commit refuses the file if the one before is not in
                    behind.wait(HANDOFF_WAIT_S)
                queue.submit(ready, queued=handoff, arrival=arrival)
        finally:
            files.remove()
        self.stats.add(seg.topic, 1, files.bytes, groups.dead_letters)
        self.stats.covered[(seg.topic, seg.partition)] = seg.end_offset
        _crash_point("after-commit")

    def _queue(self, topic: str) -> CommitQueue[_Ready, None]:
        with self._queues_lock:
            queue = self._queues.get(topic)
            if queue is None:
                queue = self._queues[topic] = CommitQueue(lambda ready: self._commit_group(topic, ready))
            return queue

    def _commit_group(self, topic: str, group: list[_Ready]) -> list[None | BaseException]:
        """One commit to the dead-letter table (value_json), then one to the table, of the segments of
        ``group``; a segment the dead-letter commit refused is left out of the table's."""
        out: list[None | BaseException] = [None] * len(group)
        for dead_letter in (True, False):
            todo = [i for i, r in enumerate(group) if out[i] is None and r.pending(dead_letter) is not None]
            if not todo:
                continue
            table = self.catalog.kept(topic, dead_letter)
            refused = _append(table, topic, [group[i].pending(dead_letter) for i in todo])  # type: ignore[misc]
            for j, why in refused.items():
                seg = group[todo[j]].seg
                out[todo[j]] = RemoteStorageError(f"{topic}-{seg.partition}: table commit of [{seg.start_offset}, "
                                                  f"{seg.end_offset}]: {why}")
        return out

    def _write(self, seg: SegmentCommit, groups: RowGroups, files: _Files, main_above: int, dead_above: int) -> None:
        with open(seg.log_path, "rb") as f, _mapped(f) as data:
            for batch in committed_batches(data, seg.topic, seg.partition, seg.start_offset, seg.end_offset,
                                           seg.aborted):
                groups.add(batch, main_above, dead_above)
                if groups.full():
                    files.write(*groups.take())
            files.write(*groups.take())


class _mapped:
    """The file's bytes as a read-only mmap (b"" for an empty file, which mmap refuses)."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.map: mmap.mmap | None = None

    def __enter__(self) -> memoryview:
        if os.fstat(self.f.fileno()).st_size == 0:
            return memoryview(b"")
        self.map = mmap.mmap(self.f.fileno(), 0, access=mmap.ACCESS_READ)
        self.view = memoryview(self.map)
        return self.view

    def __exit__(self, *exc: object) -> None:
        if self.map is not None:
            self.view.release()
            self.map.close()


class _Files:
    """The segment's Parquet files in staging (main, dead-letter), written a row group at a time."""

    def __init__(self, staging: Path, seg: SegmentCommit) -> None:
        name = f"{seg.start_offset:020d}-{seg.segment_id}.parquet"
        self.keys = {which: f"{WAREHOUSE_KEY}/{folder}/{seg.topic}/data/partition={seg.partition}/{name}"
                     for which, folder in (("main", "topics"), ("dead", "dead-letter"))}
        self.paths = {which: staging / f"{which}-{seg.topic}-{seg.partition}-{name}" for which in self.keys}
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.rows = {"main": 0, "dead": 0}
        self.bytes = 0

    def write(self, main: pa.Table, dead: pa.Table | None) -> None:
        for which, table in (("main", main), ("dead", dead)):
            if table is None or table.num_rows == 0:
                continue
            if which not in self.writers:
                self.writers[which] = pq.ParquetWriter(self.paths[which], table.schema, **parquet_options(table.schema))
            self.writers[which].write_table(table, row_group_size=ROW_GROUP_RECORDS)
            self.rows[which] += table.num_rows

    def upload(self, store: ObjectStore) -> tuple[WrittenFile | None, WrittenFile | None]:
        """Put each non-empty file and verify it: (main file, dead-letter file), None where no rows."""
        out: dict[str, WrittenFile | None] = {"main": None, "dead": None}
        for which, writer in self.writers.items():
            writer.close()
            if self.rows[which] == 0:
                continue
            path, key = self.paths[which], self.keys[which]
            expected = file_checksum(path)
            store.put_file(key, path)
            stored = store.checksum(key)
            if stored != expected:
                raise UploadVerificationError(f"{key}: stored {stored.size} bytes crc32c {stored.crc32c:#010x}, "
                                              f"sent {expected.size} bytes crc32c {expected.crc32c:#010x}")
            self.bytes += expected.size
            out[which] = WrittenFile(store_uri(store, key), writer.writer.metadata, expected.size)
        self.writers.clear()
        return out["main"], out["dead"]

    def remove(self) -> None:
        for writer in self.writers.values():
            writer.close()
        for path in self.paths.values():
            path.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class _Ready:
    """A segment whose Parquet files are in the store, waiting for its commits."""

    seg: SegmentCommit
    main: Pending | None
    dead: Pending | None

    def pending(self, dead_letter: bool) -> Pending | None:
        return self.dead if dead_letter else self.main


def _above(covered: int, seg: SegmentCommit, behind: threading.Event | None) -> int:
    """The offset ``seg``'s file starts after: what the table covers, or, with the segment before it
    still on its way (``behind``), at least that one's end."""
    return covered if behind is None else max(covered, seg.start_offset - 1)


def _pending(seg: SegmentCommit, above: int, written: WrittenFile | None) -> Pending | None:
    """The segment's file for one table; None when that table covers the segment already."""
    if above >= seg.end_offset:
        return None
    return Pending(seg.partition, seg.start_offset, seg.end_offset, above, str(seg.segment_id),
                   None if written is None else written.uri, written)


def _append(table: Table, topic: str, pending: list[Pending]) -> dict[int, str]:
    """One commit of the ``pending`` files that still fit (``group_commit.plan_commit``) and each partition's
    covered offset, the segments in the snapshot summary; returns index -> why, of those refused.

    Conditional on what the table covers: pyiceberg's own retry of a commit that lost a race re-applies
    the append to the new metadata without looking at our property, so two attempts at one segment (a
    deposed leader's upload still running and the new leader's, on one broker or two) would both land.
    The table is made with ``commit.retry.num-retries=0`` and the retry is here: reload, plan again
    against the covered offsets, commit again, at most ``COMMIT_ATTEMPTS`` times. A segment another
    attempt committed first is done (its file is left to the upkeep). The files are appended from their
    footers (``data_files.append_written``), without ``add_files``' duplicate check (every file name holds
    its segment's id, and the check reads every manifest of the table) or its second read of each file."""
    for attempt in range(COMMIT_ATTEMPTS):
        plan = plan_commit(pending, covered_offsets(table))
        if not plan.accepted:
            return plan.refused
        files = [f for f in (pending[i].written for i in plan.accepted) if f is not None]
        try:
            with transaction(table) as tx:
                append_written(tx, files, plan.summary(pending))
                tx.set_properties({**{f"{LAST_OFFSET_PREFIX}{p}": str(o) for p, o in plan.last_offsets.items()},
                                   **TABLE_PROPERTIES})
            return plan.refused
        except CommitFailedException:
            time.sleep(min(1.0, 0.05 * 2 ** attempt) * (1 + random.random() / 10))
            table = table.refresh()
    raise RemoteStorageError(f"{topic}: table commit of {len(pending)} segments lost {COMMIT_ATTEMPTS} races "
                             "with other commits")


def _crash_point(name: str) -> None:
    """Tests only: SIGKILL this process the first time it reaches ``name`` (a real crash, no cleanup)."""
    where = os.environ.get(CRASH_DIR_ENV)
    if not where:
        return
    marker = Path(where) / name
    if marker.exists():
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGKILL)
