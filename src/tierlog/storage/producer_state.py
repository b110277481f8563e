"""Idempotent producer state of one partition: duplicate and sequence checks (KIP-98).

For every producer id the partition remembers its epoch and the metadata of
its last ``MAX_CACHED_BATCHES`` batches (first/last sequence, first/last
offset).  An incoming batch is

- a duplicate when its sequence range equals a cached batch's: the append is
  skipped and the original offsets are answered, as Kafka does for retries;
- fenced when its epoch is older than the known epoch (INVALID_PRODUCER_EPOCH);
- out of order when, in the same epoch, its first sequence is not the last
  sequence + 1, or when a new epoch does not start at sequence 0
  (OUT_OF_ORDER_SEQUENCE_NUMBER).

An unknown producer (new, or state lost with old segments) is accepted at any
sequence.  The state is rebuilt from batch headers when a log is opened
(``rebuild``, from the latest ``.snapshot`` file and the batches after it), so
duplicates are caught across restarts too; ``snapshot`` is what such a file holds.  Sans-IO: batch
headers in, verdicts out.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from tierlog.protocol.errors import ErrorCode
from tierlog.storage.producer_snapshot import SnapshotEntry

__all__ = ["MAX_CACHED_BATCHES", "Duplicate", "ProducerStateError", "ProducerStateManager"]

MAX_CACHED_BATCHES = 5          # Kafka keeps the last five batches per producer
INT32_MAX = 2**31 - 1


class ProducerStateError(Exception):
    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class Duplicate:
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class _Producer:
    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    last_timestamp: int = -1

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


def _last_sequence(header) -> int:
    return (header.base_sequence + header.last_offset_delta) % (INT32_MAX + 1)


class ProducerStateManager:
    def __init__(self):
        self._producers: dict[int, _Producer] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def check(self, headers) -> Duplicate | None:
        """Verdict on the batches of one append; raises ProducerStateError."""
        for h in headers:
            if h.producer_id < 0 or h.base_sequence < 0:
                continue
            dup = self._check_one(h)
            if dup is not None:
                if len(headers) != 1:
                    raise ProducerStateError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                             "a duplicate batch arrived together with other batches")
                return dup
        return None

    def _check_one(self, h) -> Duplicate | None:
        p = self._producers.get(h.producer_id)
        if p is None:
            return None
        if h.producer_epoch < p.epoch:
            raise ProducerStateError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                     f"producer {h.producer_id} epoch {h.producer_epoch} is older than {p.epoch}")
        if h.producer_epoch > p.epoch:
            if h.base_sequence != 0:
                raise ProducerStateError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                         f"new epoch {h.producer_epoch} must start at sequence 0")
            return None
        last_seq = _last_sequence(h)
        for first, last, base_offset, last_offset in p.batches:
            if (first, last) == (h.base_sequence, last_seq):
                return Duplicate(base_offset, last_offset)
        expected = (p.last_sequence + 1) % (INT32_MAX + 1)
        if p.batches and h.base_sequence != expected:
            raise ProducerStateError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                     f"producer {h.producer_id}: sequence {h.base_sequence}, expected {expected}")
        return None

    def update(self, headers) -> None:
        """Record appended batches (offsets already assigned)."""
        for h in headers:
            if h.producer_id < 0 or h.base_sequence < 0:
                continue
            p = self._producers.get(h.producer_id)
            if p is None or h.producer_epoch > p.epoch:
                p = self._producers[h.producer_id] = _Producer(h.producer_epoch)
            p.batches.append((h.base_sequence, _last_sequence(h), h.base_offset, h.last_offset))
            p.last_timestamp = h.max_timestamp

    def rebuild(self, headers, snapshot: list[SnapshotEntry] = ()) -> None:
        """Forget everything, load ``snapshot`` and replay batch headers (after it) in log order."""
        self._producers.clear()
        for e in snapshot:
            first = (e.last_sequence - e.offset_delta) % (INT32_MAX + 1)
            p = self._producers[e.producer_id] = _Producer(e.epoch, last_timestamp=e.timestamp)
            p.batches.append((first, e.last_sequence, e.last_offset - e.offset_delta, e.last_offset))
        for h in headers:
            if not h.is_control:
                self.update((h,))

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch (the log cleaner keeps that batch)."""
        return {pid: p.batches[-1][3] for pid, p in self._producers.items() if p.batches}

    def snapshot(self) -> list[SnapshotEntry]:
        """The state as Kafka's snapshot holds it: each producer's epoch and last batch."""
        out = []
        for pid, p in sorted(self._producers.items()):
            if p.batches:
                _first, last_seq, base, last = p.batches[-1]
                out.append(SnapshotEntry(pid, p.epoch, last_seq, last, last - base, p.last_timestamp))
        return out
