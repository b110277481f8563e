"""Jepsen's Kafka anomalies in a history of transactional writes and read_committed polls.

Pure: a :class:`History` in, a list of :class:`Anomaly` out, no IO.  The history is what the
clients saw (``txn_workload.py`` records it over sockets; the unit tests write it by hand):

- each transaction of each transactional producer: its writes (partition, a value unique in the
  whole history, the offset its delivery report gave or ``None``) and its outcome, ``commit``
  (commit_transaction returned), ``abort`` (it never asked to commit, or abort_transaction
  returned after a failed commit) or ``unknown`` (a commit asked for and never answered);
- each consumer session (one consumer from assign to close) in the order they began: where it
  began on each partition (the group's committed offset, else 0), its polls in order
  (partition, offset, value), the offset commits the group acknowledged, and, for a session that
  read every partition to its end after the faults (the drain), that end offset per partition.

The anomalies (Jepsen's names, "Kafka" analysis of Bufstream and Redpanda):

- ``lost-write``: a record of a committed transaction no session read, although a session read
  past its offset on its partition (or, its offset unknown, a drain read the whole partition).
- ``duplicate``: one value at two (partition, offset) places.
- ``aborted-read``: a value of an aborted transaction was read.  ``unknown-read``: a value
  nobody wrote.
- ``torn-transaction``: a transaction some of whose records were read while another was read
  past and not seen (the commit is all or nothing, KIP-98).
- ``nonmonotonic-poll``: within a session, a partition's offsets went backwards or repeated.
- ``skipping-poll``: within a session, a partition's consecutive polls (or its start and its first
  poll) stepped over an offset where a visible record is known to be.
- ``inconsistent-offsets``: one (partition, offset) with two values.
- ``lost-offset-commit``: a session began below an offset commit the group acknowledged before.

Offsets are per partition of the one topic the workload writes.  A *visible* record is one a
read_committed consumer must not step over: a committed transaction's record at the offset its
delivery report gave, or any record read whose transaction did not abort.  A partition is held by
one group session at a time (the workload assigns each partition to one consumer).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["commit", "abort", "unknown"]
OUTCOMES = ("commit", "abort", "unknown")
KINDS = ("lost-write", "duplicate", "aborted-read", "unknown-read", "torn-transaction", "nonmonotonic-poll",
         "skipping-poll", "inconsistent-offsets", "lost-offset-commit")


@dataclass(frozen=True)
class Write:
    partition: int
    value: str
    offset: int | None = None       # from the delivery report


@dataclass(frozen=True)
class Txn:
    producer: str
    writes: tuple[Write, ...]
    outcome: Outcome

    def __post_init__(self) -> None:
        assert self.outcome in OUTCOMES, self.outcome


@dataclass(frozen=True)
class Read:
    partition: int
    offset: int
    value: str


@dataclass(frozen=True)
class Session:
    consumer: str
    start: dict[int, int]                   # partition -> the offset it began at (inclusive)
    reads: tuple[Read, ...] = ()            # in poll order
    commits: tuple[tuple[int, int], ...] = ()   # (partition, offset) acknowledged, in order
    end: dict[int, int] | None = None       # drain: partition -> offset read up to (exclusive)


@dataclass
class History:
    txns: list[Txn] = field(default_factory=list)
    sessions: list[Session] = field(default_factory=list)    # in the order they began


@dataclass(frozen=True)
class Anomaly:
    kind: str
    detail: str


def check(history: History) -> list[Anomaly]:
    """Every anomaly in ``history`` (an empty list: none found)."""
    index = _Index(history)
    found: list[Anomaly] = []
    for rule in (_bad_reads, _duplicates, _inconsistent_offsets, _lost_and_torn, _poll_order, _offset_commits):
        found += rule(history, index)
    return found


def counts(anomalies: Iterable[Anomaly]) -> dict[str, int]:
    """Anomalies per kind, every kind present (0 where none)."""
    out = dict.fromkeys(KINDS, 0)
    for a in anomalies:
        out[a.kind] += 1
    return out


class _Index:
    """Where each value was written and seen, what is known at each offset, how far each session read."""

    def __init__(self, history: History) -> None:
        self.txn_of: dict[str, Txn] = {}
        self.places: dict[str, set[tuple[int, int]]] = defaultdict(set)     # value -> (partition, offset)
        self.at: dict[tuple[int, int], set[str]] = defaultdict(set)         # (partition, offset) -> values
        self.seen: set[str] = set()
        visible: dict[int, set[int]] = defaultdict(set)
        for txn in history.txns:
            for w in txn.writes:
                assert w.value not in self.txn_of, f"value {w.value!r} written twice in the history"
                self.txn_of[w.value] = txn
                if w.offset is not None:
                    self._place(w.value, w.partition, w.offset)
                    if txn.outcome == "commit":
                        visible[w.partition].add(w.offset)
        self.reach: list[dict[int, int]] = []       # per session: partition -> the highest offset polled
        for s in history.sessions:
            reach: dict[int, int] = {}
            for r in s.reads:
                self.seen.add(r.value)
                self._place(r.value, r.partition, r.offset)
                reach[r.partition] = max(reach.get(r.partition, r.offset), r.offset)
                if r.value not in self.txn_of or self.txn_of[r.value].outcome != "abort":
                    visible[r.partition].add(r.offset)
            self.reach.append(reach)
        self.visible = {p: sorted(offsets) for p, offsets in visible.items()}

    def _place(self, value: str, partition: int, offset: int) -> None:
        self.places[value].add((partition, offset))
        self.at[(partition, offset)].add(value)

    def visible_between(self, partition: int, low: int, high: int) -> list[int]:
        """Known visible offsets o with low <= o < high."""
        offsets = self.visible.get(partition, [])
        return offsets[bisect_left(offsets, low):bisect_left(offsets, high)]


def _bad_reads(history: History, index: _Index) -> Iterator[Anomaly]:
    for s in history.sessions:
        for r in s.reads:
            txn = index.txn_of.get(r.value)
            if txn is None:
                yield Anomaly("unknown-read", f"{s.consumer} read {r.value!r} at {r.partition}/{r.offset}: never written")
            elif txn.outcome == "abort":
                yield Anomaly("aborted-read", f"{s.consumer} read {r.value!r} at {r.partition}/{r.offset} "
                                              f"of an aborted transaction of {txn.producer}")


def _duplicates(history: History, index: _Index) -> Iterator[Anomaly]:
    for value, places in sorted(index.places.items()):
        if len(places) > 1:
            yield Anomaly("duplicate", f"{value!r} at {sorted(places)}")


def _inconsistent_offsets(history: History, index: _Index) -> Iterator[Anomaly]:
    for (p, o), values in sorted(index.at.items()):
        if len(values) > 1:
            yield Anomaly("inconsistent-offsets", f"{p}/{o} holds {sorted(values)}")


def _covered(history: History, index: _Index, partition: int, offset: int | None) -> str | None:
    """A session that read past ``offset`` on ``partition`` (it began at or below it and polled
    above it, or drained the partition past it); with no offset, a drain of the partition."""
    for s, reach in zip(history.sessions, index.reach):
        start = s.start.get(partition)
        if start is None:
            continue
        if s.end is not None and partition in s.end and (offset is None or start <= offset < s.end[partition]):
            return s.consumer
        if offset is not None and start <= offset < reach.get(partition, -1):
            return s.consumer
    return None


def _offset_of(index: _Index, w: Write) -> int | None:
    """The write's offset: its delivery report's, else the one place it was read at."""
    if w.offset is not None:
        return w.offset
    places = [o for p, o in index.places.get(w.value, ()) if p == w.partition]
    return places[0] if len(places) == 1 else None


def _lost_and_torn(history: History, index: _Index) -> Iterator[Anomaly]:
    for txn in history.txns:
        if txn.outcome == "abort":
            continue
        missed = [(w, by) for w in txn.writes if w.value not in index.seen
                  if (by := _covered(history, index, w.partition, _offset_of(index, w)))]
        if txn.outcome == "commit":
            for w, by in missed:
                yield Anomaly("lost-write", f"{w.value!r} of {txn.producer} on partition {w.partition} "
                                            f"(offset {w.offset}) read past by {by}, never seen")
        if missed and any(w.value in index.seen for w in txn.writes):
            yield Anomaly("torn-transaction", f"{txn.producer}'s {[w.value for w in txn.writes]}: "
                                              f"{[w.value for w, _ in missed]} read past, the rest seen")


def _poll_order(history: History, index: _Index) -> Iterator[Anomaly]:
    for s in history.sessions:
        last = {p: o - 1 for p, o in s.start.items()}       # per partition: the offset before the next one due
        for r in s.reads:
            before = last.get(r.partition)
            if before is not None and r.offset <= before:
                yield Anomaly("nonmonotonic-poll", f"{s.consumer} polled {r.partition}/{r.offset} after {before}")
            elif before is not None and (gap := index.visible_between(r.partition, before + 1, r.offset)):
                yield Anomaly("skipping-poll", f"{s.consumer} polled {r.partition}/{r.offset} after {before}, "
                                               f"stepping over visible offsets {gap}")
            last[r.partition] = r.offset if before is None else max(before, r.offset)


def _offset_commits(history: History, index: _Index) -> Iterator[Anomaly]:
    acked: dict[int, int] = {}          # partition -> the last offset commit acknowledged
    for s in history.sessions:
        if s.end is None:
            for p, start in s.start.items():
                if p in acked and start < acked[p]:
                    yield Anomaly("lost-offset-commit", f"{s.consumer} began {p} at {start} after the group "
                                                        f"acknowledged a commit of {acked[p]}")
        for p, o in s.commits:
            acked[p] = o
