"""The replicated log the core writes to: an interface and an in-memory implementation.

Offsets: ``start_offset`` is the log begin offset (first offset held, inclusive),
``end_offset`` is exclusive. ``start_epoch`` is the epoch of the record at
``start_offset - 1`` (the epoch of the snapshot the log starts at; 0 for an empty
prefix). Batches are whole: truncation and prefix deletion never split one.

Durability contract: appends become durable at ``flush()``; ``truncate_to``,
``truncate_fully_and_start_at`` and ``delete_before`` are durable when they return.
A crash loses exactly the appends after the last flush (``MemoryLog.crash``).
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Sequence

from tierlog.raft.types import LogBatch, OffsetAndEpoch

__all__ = ["MemoryLog", "ReplicatedLog"]


class ReplicatedLog(ABC):
    @property
    @abstractmethod
    def start_offset(self) -> int: ...

    @property
    @abstractmethod
    def start_epoch(self) -> int: ...

    @property
    @abstractmethod
    def end_offset(self) -> int: ...  # exclusive

    @property
    @abstractmethod
    def flushed_end_offset(self) -> int: ...  # exclusive

    @abstractmethod
    def last_fetched_epoch(self) -> int:
        """Epoch of the last record, or ``start_epoch`` when the log holds none."""

    @abstractmethod
    def append_as_leader(self, records: Sequence[bytes], epoch: int, timestamp_ms: int,
                         control: bool = False, control_type: int = 2) -> LogBatch: ...

    @abstractmethod
    def append_as_follower(self, batches: Sequence[LogBatch]) -> None: ...

    @abstractmethod
    def read(self, offset: int, max_bytes: int, end: int | None = None) -> list[LogBatch]:
        """Batches from ``offset`` (a batch boundary) to ``end`` (exclusive, default the log
        end), at most ``max_bytes`` but at least one batch when any is there."""

    @abstractmethod
    def truncate_to(self, offset: int) -> None:
        """Drop every batch holding an offset >= ``offset`` (durable on return)."""

    @abstractmethod
    def truncate_fully_and_start_at(self, offset: int, epoch: int) -> None: ...

    @abstractmethod
    def delete_before(self, offset: int, epoch: int) -> None:
        """Advance the start to ``offset`` (a batch boundary or the end); ``epoch`` is the
        epoch of ``offset - 1``."""

    @abstractmethod
    def epoch_entries(self) -> list[tuple[int, int]]:
        """(epoch, start offset) for each epoch in the log, oldest first, beginning with
        (start_epoch, start_offset)."""

    @abstractmethod
    def is_batch_boundary(self, offset: int) -> bool: ...

    @abstractmethod
    def flush(self) -> None: ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """(end offset, epoch) of the largest epoch <= ``epoch`` in the log; (-1, -1) if none.

        The end offset is where the next epoch starts, or the log end for the last one.
        """
        entries = self.epoch_entries()
        found = None
        for i, (e, _start) in enumerate(entries):
            if e <= epoch:
                found = i
            else:
                break
        if found is None:
            return OffsetAndEpoch(-1, -1)
        e = entries[found][0]
        end = entries[found + 1][1] if found + 1 < len(entries) else self.end_offset
        return OffsetAndEpoch(end, e)

    def epoch_of(self, offset: int) -> int | None:
        """Epoch of the record at ``offset`` (``start_offset - 1`` gives start_epoch)."""
        if offset == self.start_offset - 1:
            return self.start_epoch
        if not self.start_offset <= offset < self.end_offset:
            return None
        result = None
        for e, start in self.epoch_entries():
            if start <= offset:
                result = e
            else:
                break
        return result


class MemoryLog(ReplicatedLog):
    """Batches in a list; a flushed prefix survives ``crash()``."""

    def __init__(self) -> None:
        self._batches: list[LogBatch] = []
        self._bases: list[int] = []
        self._start = 0
        self._start_epoch = 0
        self._flushed = 0

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def start_epoch(self) -> int:
        return self._start_epoch

    @property
    def end_offset(self) -> int:
        return self._batches[-1].next_offset if self._batches else self._start

    @property
    def flushed_end_offset(self) -> int:
        return max(self._flushed, self._start)

    def last_fetched_epoch(self) -> int:
        return self._batches[-1].epoch if self._batches else self._start_epoch

    def append_as_leader(self, records: Sequence[bytes], epoch: int, timestamp_ms: int,
                         control: bool = False, control_type: int = 2) -> LogBatch:
        assert records, "a batch needs records"
        assert epoch >= self.last_fetched_epoch(), (epoch, self.last_fetched_epoch())
        batch = LogBatch(self.end_offset, epoch, timestamp_ms, tuple(records), control, control_type)
        self._push(batch)
        return batch

    def append_as_follower(self, batches: Sequence[LogBatch]) -> None:
        for batch in batches:
            assert batch.base_offset == self.end_offset, (batch.base_offset, self.end_offset)
            assert batch.epoch >= self.last_fetched_epoch(), (batch.epoch, self.last_fetched_epoch())
            self._push(batch)

    def _push(self, batch: LogBatch) -> None:
        self._batches.append(batch)
        self._bases.append(batch.base_offset)

    def read(self, offset: int, max_bytes: int, end: int | None = None) -> list[LogBatch]:
        end = self.end_offset if end is None else end
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0 or (i < len(self._batches) and self._batches[i].next_offset <= offset):
            i += 1
        out: list[LogBatch] = []
        size = 0
        while i < len(self._batches) and self._batches[i].next_offset <= end:
            b = self._batches[i]
            size += b.size_estimate()
            if out and size > max_bytes:
                break
            out.append(b)
            i += 1
        return out

    def truncate_to(self, offset: int) -> None:
        i = bisect.bisect_right(self._bases, offset - 1) - 1  # batch holding offset - 1
        keep = i + 1 if i >= 0 and self._batches[i].last_offset < offset else max(i, 0)
        del self._batches[keep:]
        del self._bases[keep:]
        self._flushed = min(self._flushed, self.end_offset)

    def truncate_fully_and_start_at(self, offset: int, epoch: int) -> None:
        self._batches.clear()
        self._bases.clear()
        self._start = offset
        self._start_epoch = epoch
        self._flushed = offset

    def delete_before(self, offset: int, epoch: int) -> None:
        assert self.is_batch_boundary(offset), offset
        if offset <= self._start:
            return
        i = bisect.bisect_left(self._bases, offset)
        del self._batches[:i]
        del self._bases[:i]
        self._start = offset
        self._start_epoch = epoch

    def epoch_entries(self) -> list[tuple[int, int]]:
        entries = [(self._start_epoch, self._start)]
        for b in self._batches:
            if b.epoch != entries[-1][0]:
                entries.append((b.epoch, b.base_offset))
        return entries

    def is_batch_boundary(self, offset: int) -> bool:
        if offset in (self._start, self.end_offset):
            return True
        i = bisect.bisect_left(self._bases, offset)
        return i < len(self._bases) and self._bases[i] == offset

    def flush(self) -> None:
        self._flushed = self.end_offset

    def crash(self) -> None:
        """Lose every append after the last flush."""
        self.truncate_to(self.flushed_end_offset)

    def __repr__(self) -> str:
        return f"MemoryLog(start={self._start}, end={self.end_offset}, flushed={self._flushed})"
