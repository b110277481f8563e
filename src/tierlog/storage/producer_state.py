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
sequence.

Transactions (KIP-98): a producer's first transactional batch opens its
transaction at that batch's base offset (``txn_first_offset``); a control batch
(a COMMIT or ABORT marker, ``marker`` = its control type) closes it and is
returned as a ``CompletedTxn``; a marker of an older epoch is fenced
(INVALID_PRODUCER_EPOCH, Kafka's ``checkProducerEpoch`` for markers); a marker of
a newer epoch (transaction.version 2 bumps it at every end, KIP-890 part 2) makes
it the producer's epoch, whose sequences start again.
``first_unstable_offset(high_watermark)`` is what bounds the last stable offset
(its cost is in the open and unreplicated transactions, not in the producers):
the first offset of the oldest transaction that is open, or whose marker is not
yet below the high watermark (Kafka's ``ongoingTxns`` and ``unreplicatedTxns``).  The state is rebuilt from batch headers when a
log is opened (``rebuild``, from the latest ``.snapshot`` file and the batches after it), so
duplicates are caught across restarts too; ``snapshot`` is what such a file holds.  Sans-IO: batch
headers in, verdicts out.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from tierlog.protocol.errors import ErrorCode
from tierlog.storage.producer_snapshot_codec import SnapshotEntry

__all__ = [
    "ABORT_MARKER",
    "COMMIT_MARKER",
    "MAX_CACHED_BATCHES",
    "ActiveProducer",
    "CompletedTxn",
    "Duplicate",
    "ProducerStateError",
    "ProducerStateManager",
]

MAX_CACHED_BATCHES = 5          # Kafka keeps the last five batches per producer
INT32_MAX = 2**31 - 1
ABORT_MARKER, COMMIT_MARKER = 0, 1      # ControlRecordType of a transaction marker
NO_OFFSET = -1
TV_2 = 2                        # transaction.version 2: every end bumps the epoch (KIP-890 part 2)


class ActiveProducer(NamedTuple):
    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_first_offset: int           # -1: no open transaction


class CompletedTxn(NamedTuple):
    """A transaction its marker ended: offsets ``first_offset`` .. ``last_offset`` (the marker)."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


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
    txn_first_offset: int = NO_OFFSET        # the open transaction's first offset
    coordinator_epoch: int = -1              # of the latest marker

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


def _last_sequence(header) -> int:
    return (header.base_sequence + header.last_offset_delta) % (INT32_MAX + 1)


class ProducerStateManager:
    def __init__(self):
        self._producers: dict[int, _Producer] = {}
        self._unreplicated: deque[CompletedTxn] = deque()     # ended, marker not yet below the high watermark
        self._open: dict[int, int] = {}     # producer id -> first offset of its open transaction (few)

    def __len__(self) -> int:
        return len(self._producers)

    def check(self, headers, marker_transaction_version: int = 0,
              marker_coordinator_epoch: int = -1) -> Duplicate | None:
        """Verdict on the batches of one append; raises ProducerStateError.  A marker of
        ``marker_transaction_version`` 2 (WriteTxnMarkers v2, KIP-1228) carries the epoch its
        end bumped to (KIP-890 part 2), so it must be above the producer's epoch here; a marker
        written by a coordinator of an older epoch than the producer's last marker was is fenced."""
        for h in headers:
            if h.is_control:
                self._check_marker(h, marker_transaction_version)
                self._check_coordinator_epoch(h, marker_coordinator_epoch)
                continue
            if h.producer_id < 0:
                continue
            if h.base_sequence < 0:
                if h.is_transactional:      # a group coordinator's TxnOffsetCommit batch: its epoch only
                    self._check_epoch(h)
                continue
            dup = self._check_one(h)
            if dup is not None:
                if len(headers) != 1:
                    raise ProducerStateError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                             "a duplicate batch arrived together with other batches")
                return dup
        return None

    def _check_marker(self, h, transaction_version: int) -> None:
        """KIP-1228: a transaction.version 2 marker at the producer's current epoch is a late copy
        of an earlier transaction's marker (that end already bumped the epoch here); appended, it
        would end the producer's next transaction, open at that epoch, with the earlier outcome."""
        p = self._producers.get(h.producer_id)
        if p is None:
            return
        bumped = transaction_version >= TV_2
        if h.producer_epoch < p.epoch or (bumped and h.producer_epoch == p.epoch):
            raise ProducerStateError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                     f"marker epoch {h.producer_epoch} of producer {h.producer_id} (transaction.version "
                                     f"{transaction_version}) is stale: the producer is at epoch {p.epoch}")

    def _check_coordinator_epoch(self, h, coordinator_epoch: int) -> None:
        """Kafka's ``checkCoordinatorEpoch`` (leader appends only; a follower keeps what its leader
        wrote): the coordinator epoch is the leader epoch of the transaction's ``__transaction_state``
        partition, so a lower one than this producer's last marker comes from a coordinator that lost
        the partition and must not end a transaction its successor handles."""
        p = self._producers.get(h.producer_id)
        if p is not None and coordinator_epoch < p.coordinator_epoch:
            raise ProducerStateError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                                     f"marker of producer {h.producer_id} from coordinator epoch {coordinator_epoch}: "
                                     f"its last marker here came from epoch {p.coordinator_epoch}")

    def _check_epoch(self, h) -> None:
        """Kafka's ``checkProducerEpoch`` for a batch appended without a sequence check (origin
        COORDINATOR): a TxnOffsetCommit of a fenced epoch (one a marker or a newer write has
        passed here) must not open a transaction whose offsets a later marker would apply."""
        p = self._producers.get(h.producer_id)
        if p is not None and h.producer_epoch < p.epoch:
            raise ProducerStateError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                     f"producer {h.producer_id} epoch {h.producer_epoch} is older than {p.epoch}")

    def _check_one(self, h) -> Duplicate | None:
        p = self._producers.get(h.producer_id)
        if p is None:
            return None
        self._check_epoch(h)
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

    def update(self, headers, markers: dict[int, tuple[int, int]] | None = None) -> list[CompletedTxn]:
        """Record appended batches (offsets already assigned); ``markers``: base offset of each
        control batch -> (control type, coordinator epoch).  Returns the transactions ended."""
        ended = []
        for h in headers:
            if h.is_control:
                marker = (markers or {}).get(h.base_offset)
                if marker is not None and h.producer_id >= 0:
                    ended.extend(self._end_txn(h, *marker))
                continue
            if h.producer_id < 0 or (h.base_sequence < 0 and not h.is_transactional):
                continue
            if h.base_sequence < 0:         # a group coordinator's TxnOffsetCommit batch: no sequence
                self._open_txn(h)
                continue
            p = self._producers.get(h.producer_id)
            if p is None or h.producer_epoch > p.epoch:
                first = p.txn_first_offset if p is not None else NO_OFFSET
                p = self._producers[h.producer_id] = _Producer(h.producer_epoch, txn_first_offset=first)
            p.batches.append((h.base_sequence, _last_sequence(h), h.base_offset, h.last_offset))
            p.last_timestamp = h.max_timestamp
            if h.is_transactional and p.txn_first_offset == NO_OFFSET:
                p.txn_first_offset = self._open[h.producer_id] = h.base_offset
        return ended

    def _open_txn(self, h) -> None:
        p = self._producers.get(h.producer_id)
        if p is None:
            p = self._producers[h.producer_id] = _Producer(h.producer_epoch)
        p.epoch = max(p.epoch, h.producer_epoch)
        if p.txn_first_offset == NO_OFFSET:
            p.txn_first_offset = self._open[h.producer_id] = h.base_offset

    def _end_txn(self, h, control_type: int, coordinator_epoch: int) -> list[CompletedTxn]:
        p = self._producers.get(h.producer_id)
        if p is None:
            p = self._producers[h.producer_id] = _Producer(h.producer_epoch)
        if h.producer_epoch > p.epoch:      # KIP-890 part 2: the marker bumped the epoch (Kafka's
            p.epoch = h.producer_epoch      # maybeUpdateProducerEpoch): sequences restart at 0
            p.batches.clear()
        p.coordinator_epoch = coordinator_epoch
        p.last_timestamp = h.max_timestamp
        first, p.txn_first_offset = p.txn_first_offset, NO_OFFSET
        self._open.pop(h.producer_id, None)
        if first == NO_OFFSET:
            return []           # a marker of a transaction with no data here (a retry, or an empty one)
        done = CompletedTxn(h.producer_id, first, h.base_offset, control_type == ABORT_MARKER)
        self._unreplicated.append(done)
        return [done]

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the oldest transaction not yet decided below ``high_watermark``."""
        if not self._open and not self._unreplicated:
            return None         # no transaction here: the common case, on every fetch of every partition
        while self._unreplicated and self._unreplicated[0].last_offset < high_watermark:
            self._unreplicated.popleft()
        firsts = [*self._open.values(), *(t.first_offset for t in self._unreplicated)]
        return min(firsts) if firsts else None

    def open_txn_first_offset(self, exclude_producer: int) -> int | None:
        """The oldest open transaction of another producer (an aborted transaction's lastStableOffset)."""
        firsts = [first for pid, first in self._open.items() if pid != exclude_producer]
        return min(firsts) if firsts else None

    def open_txn_epoch(self, producer_id: int) -> int | None:
        """The producer's epoch if it has an open transaction here, else None."""
        p = self._producers.get(producer_id)
        return p.epoch if p is not None and p.txn_first_offset != NO_OFFSET else None

    def active(self) -> list[ActiveProducer]:
        """Every known producer (DescribeProducers, KIP-664)."""
        return [ActiveProducer(pid, p.epoch, p.last_sequence, p.last_timestamp, p.coordinator_epoch,
                               p.txn_first_offset) for pid, p in sorted(self._producers.items())]

    def ongoing(self) -> dict[int, tuple[int, int]]:
        """Producer id -> (epoch, first offset) of each open transaction (DescribeProducers)."""
        return {pid: (self._producers[pid].epoch, first) for pid, first in sorted(self._open.items())}

    def rebuild(self, headers, snapshot: Sequence[SnapshotEntry] = (),
                markers: dict[int, tuple[int, int]] | None = None, history=()) -> list[CompletedTxn]:
        """Forget everything, load ``snapshot`` and replay batch headers (after it) in log order;
        the transactions the replay saw end.  ``history``: batch headers below the snapshot (in log
        order), which give back the batches before each producer's last one that the snapshot
        lacks (``_earlier_batches``)."""
        self._producers.clear()
        self._unreplicated.clear()
        self._open.clear()
        earlier = _earlier_batches(history, markers)
        for e in snapshot:
            first = (e.last_sequence - e.offset_delta) % (INT32_MAX + 1)
            p = self._producers[e.producer_id] = _Producer(e.epoch, last_timestamp=e.timestamp,
                                                           txn_first_offset=e.current_txn_first_offset,
                                                           coordinator_epoch=e.coordinator_epoch)
            if e.current_txn_first_offset != NO_OFFSET:
                self._open[e.producer_id] = e.current_txn_first_offset
            if e.last_sequence >= 0:
                p.batches.extend(earlier.get((e.producer_id, e.epoch, e.last_offset), ()))
                p.batches.append((first, e.last_sequence, e.last_offset - e.offset_delta, e.last_offset))
        ended = []
        for h in headers:
            ended.extend(self.update((h,), markers))
        return ended

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch (the log cleaner keeps that batch)."""
        return {pid: p.batches[-1][3] for pid, p in self._producers.items() if p.batches}

    def snapshot(self) -> list[SnapshotEntry]:
        """The state as Kafka's snapshot holds it: each producer's epoch, last batch, open
        transaction's first offset and latest marker's coordinator epoch."""
        out = []
        for pid, p in sorted(self._producers.items()):
            if p.batches:
                _first, last_seq, base, last = p.batches[-1]
                out.append(SnapshotEntry(pid, p.epoch, last_seq, last, last - base, p.last_timestamp,
                                         p.coordinator_epoch, p.txn_first_offset))
            elif p.txn_first_offset != NO_OFFSET or p.coordinator_epoch >= 0:
                out.append(SnapshotEntry(pid, p.epoch, -1, -1, 0, p.last_timestamp, p.coordinator_epoch,
                                         p.txn_first_offset))
        return out


def _earlier_batches(history, markers: dict[int, tuple[int, int]] | None) -> dict[tuple, list]:
    """(producer id, epoch, last offset of its last batch) -> the batches before that one, from
    replaying ``history``: a snapshot keeps a producer's last batch only, so without them a retry
    of one of its other in-flight batches after a restart or a truncation would be
    OUT_OF_ORDER_SEQUENCE_NUMBER instead of a duplicate (and a client bumping its epoch on that
    writes the batch again)."""
    replay = ProducerStateManager()
    for h in history:
        replay.update((h,), markers)
    return {(pid, p.epoch, p.batches[-1][3]): list(p.batches)[:-1]
            for pid, p in replay._producers.items() if p.batches}
