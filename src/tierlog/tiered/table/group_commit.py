"""Group commit: the segments that copier threads upload at once go into a table in one Iceberg commit.

Every commit of a table rewrites its metadata (a manifest, a manifest list, the metadata
JSON, the catalog's pointer), and commits of one table from several threads race each
other (the loser reloads and tries again). So the uploads of a topic's partitions that
finish at about the same time are committed together: a thread that brings a segment
while another commits waits; when that commit ends, one of the waiting threads takes
everything queued (at most ``GROUP_COMMIT_SEGMENTS_MAX``) and commits it in one
Iceberg commit; each thread returns when the commit holding its segment is done (or
raises what failed it), so the upload of a segment is still complete only once its
commit is. A segment whose file is being written is announced (``coming``); the thread
about to commit waits for the announced ones, at most ``GROUP_COMMIT_WAIT_S``, so they
go in the same commit.

``plan_commit`` (sans-IO) decides, against what the table covers now, which queued
segments go in: a segment is written from the offset after what the table covered
when its Parquet file was made (``above``); it goes in only if the table still covers
exactly that (then no offset is twice in the table and none is skipped), is done
when the table covers its end already (another attempt committed it: its file is
left to the upkeep), and fails otherwise (the table moved past ``above`` but not to
its end: its file would hold offsets twice; the upload fails and the retry writes
from the new covered offset). Several segments of one partition in one commit go in
offset order, each checked against the one before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tierlog.clock import monotonic_s

__all__ = ["GROUP_COMMIT_SEGMENTS_MAX", "GROUP_COMMIT_WAIT_S", "CommitQueue", "Pending", "Plan", "plan_commit"]

GROUP_COMMIT_SEGMENTS_MAX = 64      # segments in one Iceberg commit: bounds its metadata and its summary
GROUP_COMMIT_WAIT_S = 0.1           # how long a group waits for segments whose files are being written

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Pending:
    """One segment's file waiting for its commit to one table."""

    partition: int
    start_offset: int       # inclusive: the segment's first offset
    end_offset: int         # inclusive
    above: int              # the file holds the segment's offsets above this (what the table covered then)
    segment_id: str
    uri: str | None         # None: no rows for this table (the covered offset still moves)
    written: Any = None     # what the writer knows of the file (its footer, size): opaque here


@dataclass(frozen=True, slots=True)
class Plan:
    accepted: list[int]             # indexes into the pending list, committed together
    covered: list[int]              # indexes already covered by another attempt (done, nothing to commit)
    refused: dict[int, str]         # index -> why it cannot go in (the upload fails and is retried)
    last_offsets: dict[int, int]    # partition -> the covered offset after the commit

    def summary(self, pending: Sequence[Pending]) -> dict[str, str]:
        """The snapshot summary: per partition its last offset, first start offset and segment ids."""
        out: dict[str, str] = {}
        by_partition: dict[int, list[Pending]] = {}
        for i in self.accepted:
            by_partition.setdefault(pending[i].partition, []).append(pending[i])
        for p, items in sorted(by_partition.items()):
            out[f"tierlog.last-offset.{p}"] = str(self.last_offsets[p])
            out[f"tierlog.start-offset.{p}"] = str(items[0].start_offset)
            out[f"tierlog.segment-id.{p}"] = ",".join(x.segment_id for x in items)
        return out


def plan_commit(pending: Sequence[Pending], covered: Mapping[int, int]) -> Plan:
    """Which of ``pending`` go into one commit, given what the table covers per partition now."""
    now = dict(covered)
    accepted: list[int] = []
    done: list[int] = []
    refused: dict[int, str] = {}
    for i in sorted(range(len(pending)), key=lambda i: (pending[i].partition, pending[i].start_offset)):
        item = pending[i]
        at = now.get(item.partition, -1)
        if at >= item.end_offset:
            done.append(i)
        elif at != item.above:
            refused[i] = (f"the table covers partition {item.partition} to {at}, the file was written from "
                          f"{item.above + 1}: written again")
        else:
            accepted.append(i)
            now[item.partition] = item.end_offset
    moved = {p: o for p, o in now.items() if o != covered.get(p, -1)}
    return Plan(accepted, done, refused, moved)


class _Entry(Generic[T, R]):
    __slots__ = ("done", "error", "item", "result")

    def __init__(self, item: T) -> None:
        self.item = item
        self.done = False
        self.result: R | None = None
        self.error: BaseException | None = None


class _Arrival:
    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending = True


class CommitQueue(Generic[T, R]):
    """Items from many threads, committed in groups by ``commit`` (items -> one outcome each, an
    exception for an item that failed); ``submit`` returns its item's outcome or raises its error."""

    def __init__(self, commit: Callable[[list[T]], list[R | BaseException]],
                 max_items: int = GROUP_COMMIT_SEGMENTS_MAX, wait_s: float = GROUP_COMMIT_WAIT_S) -> None:
        self._commit, self._max, self._wait_s = commit, max_items, wait_s
        self._cond = threading.Condition()
        self._queue: list[_Entry[T, R]] = []
        self._busy = False
        self._coming = 0        # items announced (``coming``) and not queued yet

    @contextmanager
    def coming(self) -> Iterator[_Arrival]:
        """Announce an item on its way (its file being written): a group about to be committed waits
        for it, at most ``wait_s``, so that one commit takes it too. Pass the arrival to ``submit``
        within the block; leaving the block without it withdraws the announcement."""
        arrival = _Arrival()
        with self._cond:
            self._coming += 1
        try:
            yield arrival
        finally:
            with self._cond:
                self._arrived(arrival)

    def _arrived(self, arrival: _Arrival | None) -> None:
        if arrival is not None and arrival.pending:
            arrival.pending = False
            self._coming -= 1
            self._cond.notify_all()

    def submit(self, item: T, queued: threading.Event | None = None, arrival: _Arrival | None = None) -> R:
        """Queue ``item`` (then set ``queued``: an item queued after it is committed in its group or a
        later one), wait for its group's commit, return its outcome."""
        entry: _Entry[T, R] = _Entry(item)
        with self._cond:
            self._queue.append(entry)
            if queued is not None:
                queued.set()
            self._arrived(arrival)
        while True:
            with self._cond:
                while self._busy and not entry.done:
                    self._cond.wait()
                if entry.done:
                    break
                self._busy = True       # this thread commits the next group (its own item in it or ahead of it)
                deadline = monotonic_s() + self._wait_s
                while self._coming and len(self._queue) < self._max and (left := deadline - monotonic_s()) > 0:
                    self._cond.wait(left)
                batch, self._queue = self._queue[:self._max], self._queue[self._max:]
            self._run(batch)
        if entry.error is not None:
            raise entry.error
        return entry.result     # type: ignore[return-value]

    def _run(self, batch: list[_Entry[T, R]]) -> None:
        outcomes: list[R | BaseException]
        try:
            outcomes = self._commit([e.item for e in batch])
            assert len(outcomes) == len(batch), (len(outcomes), len(batch))
        except BaseException as e:          # noqa: BLE001 - the whole group failed: each of its threads raises it
            outcomes = [e] * len(batch)
        with self._cond:
            for entry, out in zip(batch, outcomes, strict=True):
                if isinstance(out, BaseException):
                    entry.error = out
                else:
                    entry.result = out
                entry.done = True
            self._busy = False
            self._cond.notify_all()
