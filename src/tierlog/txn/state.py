"""One transactional id's state in the transaction coordinator (Kafka's ``TransactionState``,
``TransactionMetadata`` and ``TxnTransitMetadata``), sans-IO.

States (id, the name DescribeTransactions shows) and the states each may follow:

==================  ==  =========================================
Empty               0   Empty, CompleteCommit, CompleteAbort
Ongoing             1   Ongoing, Empty, CompleteCommit, CompleteAbort
PrepareCommit       2   Ongoing
PrepareAbort        3   Ongoing, PrepareEpochFence
CompleteCommit      4   PrepareCommit
CompleteAbort       5   PrepareAbort
Dead                6   Empty, CompleteCommit, CompleteAbort
PrepareEpochFence   7   Ongoing
==================  ==  =========================================

A change is two steps, as in Kafka: ``prepare_*`` checks the transition, sets
``pending_state`` and returns a ``TxnTransit`` (the record to write to
``__transaction_state``); once that record is committed, ``complete_transition``
applies it (checking Kafka's rules: producer id and epoch as expected, partitions
only added while Ongoing, ...); a write that failed calls ``revert_pending``.  A
second transition may be prepared on ``projected`` (the metadata as the pending one
will leave it) and written in the same batch; ``complete_chained`` applies it.
While a transition is pending no other may be prepared (the coordinator answers
CONCURRENT_TRANSACTIONS).  An illegal transition is a programmer error
(``AssertionError``): request handling checks the state first.

Epochs: InitProducerId bumps (``prepare_increment_producer_epoch``, KIP-360's
retry and fencing rules) or rotates to a new producer id
(``prepare_producer_id_rotation``) when the epoch is exhausted (>= 32766);
a fenced or expired Ongoing transaction gets epoch + 1 (``prepare_fence_producer_epoch``,
PrepareEpochFence, taken by ``take_epoch_fence``, then PrepareAbort); with transaction.version 2 (KIP-890 part 2)
every EndTxn bumps the epoch (``prepare_abort_or_commit``), and an exhausted epoch
moves to ``next_producer_id`` at epoch 0 when the transaction completes.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from tierlog.protocol.errors import ErrorCode

__all__ = ["NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "TransactionMetadata", "TransactionState", "TxnTransit",
           "is_epoch_exhausted"]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767
TV_2 = 2                # transaction.version 2: an epoch bump on every EndTxn (KIP-890 part 2)


class TransactionState(enum.Enum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def id(self) -> int:
        """The TransactionStatus int8 of ``__transaction_state`` values."""
        return self.value

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions / ListTransactions use ("PrepareCommit")."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return _VALID_PREVIOUS[self]

    @property
    def expiration_allowed(self) -> bool:
        """A transactional id in this state may expire (``transactional.id.expiration.ms``)."""
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        try:
            return cls(state_id)
        except ValueError:
            raise ValueError(f"unknown transaction state id {state_id}") from None

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionState | None:
        return next((s for s in cls if s.kafka_name == name), None)


_S = TransactionState
_ENDED = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: _ENDED,
    _S.ONGOING: _ENDED | {_S.ONGOING},
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: _ENDED,
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``: one epoch is kept for fencing."""
    return producer_epoch >= SHORT_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The target of a prepared transition: what is written to the log, then applied."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[tuple[str, int]]
    start_timestamp_ms: int
    last_update_timestamp_ms: int
    client_transaction_version: int = 0


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    last_update_timestamp_ms: int
    state: TransactionState = TransactionState.EMPTY
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_timestamp_ms: int = -1
    client_transaction_version: int = 0
    pending_state: TransactionState | None = None
    # a fence whose record was not written: the next fence does not bump the epoch again
    has_failed_epoch_fence: bool = False

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (TransactionState.ONGOING, TransactionState.PREPARE_ABORT, TransactionState.PREPARE_COMMIT)

    # -- preparing transitions ---------------------------------------------------------------
    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Fence the current producer of an Ongoing transaction (a new InitProducerId or a timeout)."""
        assert self.producer_epoch != SHORT_MAX, "fencing would overflow the epoch"
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(TransactionState.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH,
                             self.timeout_ms, frozenset(self.partitions), self.start_timestamp_ms,
                             self.last_update_timestamp_ms)

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> tuple[int, TxnTransit | None]:
        """InitProducerId on an ended transaction: (error, transit).  KIP-360: no expected epoch bumps;
        the current one (or none yet) bumps and remembers it; the last one is a retry of a call that
        succeeded (no bump); any other epoch is PRODUCER_FENCED."""
        assert not self.epoch_exhausted, f"no producer epochs left for producer id {self.producer_id}"
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED, None
        return 0, self._prepare(TransactionState.EMPTY, self.producer_id, epoch, last, timeout_ms, frozenset(), -1,
                                now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        """InitProducerId when the epoch is exhausted (or the id is new): a new producer id at epoch 0."""
        assert not self.has_pending_transaction, "cannot rotate producer ids while a transaction is pending"
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(TransactionState.EMPTY, new_producer_id, 0, last, timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, added: frozenset[tuple[str, int]], now_ms: int) -> TxnTransit:
        """AddPartitionsToTxn / AddOffsetsToTxn: Ongoing with these partitions too; a new
        transaction starts now."""
        ended = self.state in _ENDED
        return self._prepare(TransactionState.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(self.partitions) | added,
                             now_ms if ended else self.start_timestamp_ms, now_ms)

    def prepare_abort_or_commit(self, new_state: TransactionState, client_transaction_version: int,
                                next_producer_id: int, now_ms: int) -> TxnTransit:
        """EndTxn: PrepareCommit or PrepareAbort; with transaction.version 2 the epoch is bumped
        (KIP-890 part 2) and, when that exhausts it, ``next_producer_id`` takes over on completion."""
        assert new_state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT), new_state
        if client_transaction_version >= TV_2:
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._prepare(new_state, self.producer_id, epoch, last, self.timeout_ms, frozenset(self.partitions),
                             self.start_timestamp_ms, now_ms, next_producer_id, client_transaction_version)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """The markers are written: CompleteCommit or CompleteAbort, no partitions."""
        assert self.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT), self.state
        new_state = TransactionState.COMPLETE_COMMIT if self.state is TransactionState.PREPARE_COMMIT \
            else TransactionState.COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        tv2 = self.client_transaction_version >= TV_2
        if tv2 and self.next_producer_id != NO_PRODUCER_ID:
            producer_id, epoch = self.next_producer_id, 0          # the epoch overflowed at EndTxn
        else:
            producer_id, epoch = self.producer_id, self.producer_epoch
        return self._prepare(new_state, producer_id, epoch, self.producer_epoch, self.timeout_ms, frozenset(),
                             self.start_timestamp_ms, now_ms, NO_PRODUCER_ID, self.client_transaction_version)

    def prepare_dead(self) -> TxnTransit:
        """The transactional id expired (its tombstone is written)."""
        return self._prepare(TransactionState.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(), self.start_timestamp_ms, self.last_update_timestamp_ms)

    def _prepare(self, state: TransactionState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[tuple[str, int]], start_ms: int, update_ms: int,
                 next_producer_id: int = NO_PRODUCER_ID, client_transaction_version: int = 0) -> TxnTransit:
        assert self.pending_state is None, f"{self.transactional_id}: already moving to {self.pending_state}"
        assert producer_id >= 0, f"illegal producer id {producer_id}"
        assert state is TransactionState.DEAD or epoch >= 0, f"illegal producer epoch {epoch}"
        assert self.state in state.valid_previous_states, f"{self.transactional_id}: {self.state} -> {state}"
        self.pending_state = state
        return TxnTransit(producer_id, self.producer_id, next_producer_id, epoch, last_epoch, timeout_ms, state,
                          partitions, start_ms, update_ms, client_transaction_version)

    def take_epoch_fence(self, producer_epoch: int) -> None:
        """A fence is never written on its own (Kafka's ``endTransaction``): its bumped epoch is taken
        at once, the pending state cleared, and the PrepareAbort that follows carries it."""
        assert self.pending_state is TransactionState.PREPARE_EPOCH_FENCE, self
        self.pending_state = None
        self.producer_epoch, self.last_producer_epoch = producer_epoch, NO_PRODUCER_EPOCH

    def projected(self, t: TxnTransit) -> TransactionMetadata:
        """A copy of this metadata as it will be once the pending ``t`` is committed: a transition
        prepared on it is written right behind ``t``, in the same batch (``complete_chained``)."""
        assert self.pending_state is t.state, f"{self.transactional_id}: pending {self.pending_state}, got {t.state}"
        ahead = replace(self, partitions=set(self.partitions))
        ahead.complete_transition(t)
        return ahead

    def complete_chained(self, t: TxnTransit) -> None:
        """Apply ``t``, prepared on ``projected`` and committed in the same batch as the transit just
        completed here (Kafka's rule of legal previous states holds: it was checked on the copy)."""
        assert self.pending_state is None and self.state in t.state.valid_previous_states, (self, t)
        self.pending_state = t.state
        self.complete_transition(t)

    def revert_pending(self) -> None:
        """The transit's record was not written: no transition is pending any more."""
        self.pending_state = None

    # -- completing them -------------------------------------------------------------------------
    def complete_transition(self, t: TxnTransit) -> None:
        """Apply ``t`` once its record is committed (Kafka's ``completeTransitionTo`` checks)."""
        assert self.pending_state is t.state, f"{self.transactional_id}: pending {self.pending_state}, got {t.state}"
        _COMPLETE[t.state](self, t)
        self.client_transaction_version = t.client_transaction_version
        self.last_update_timestamp_ms = t.last_update_timestamp_ms
        self.pending_state = None
        self.state = t.state

    def _complete_empty(self, t: TxnTransit) -> None:
        assert self.producer_epoch == t.producer_epoch or self._valid_epoch_bump(t), (self, t)
        assert not t.partitions and t.start_timestamp_ms == -1, (self, t)
        self.timeout_ms, self.producer_epoch, self.last_producer_epoch = t.timeout_ms, t.producer_epoch, \
            t.last_producer_epoch
        self.producer_id, self.previous_producer_id = t.producer_id, t.previous_producer_id

    def _complete_ongoing(self, t: TxnTransit) -> None:
        assert self._valid_epoch(t) and self.partitions <= t.partitions and self.timeout_ms == t.timeout_ms, (self, t)
        self.start_timestamp_ms = t.start_timestamp_ms
        self.partitions |= t.partitions

    def _complete_prepare(self, t: TxnTransit) -> None:
        assert self._valid_epoch(t) and self.partitions == t.partitions and self.timeout_ms == t.timeout_ms \
            and self.start_timestamp_ms == t.start_timestamp_ms, (self, t)
        if t.client_transaction_version >= TV_2:
            self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
            self.next_producer_id = t.next_producer_id

    def _complete_complete(self, t: TxnTransit) -> None:
        assert self._valid_epoch(t) and self.timeout_ms == t.timeout_ms and t.start_timestamp_ms != -1, (self, t)
        self.start_timestamp_ms = t.start_timestamp_ms
        self.partitions.clear()
        if t.client_transaction_version >= TV_2:
            self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
            self.previous_producer_id, self.producer_id = t.previous_producer_id, t.producer_id
            self.next_producer_id = t.next_producer_id

    @staticmethod
    def _never(_self: TransactionMetadata, t: TxnTransit) -> None:
        """PrepareEpochFence is followed by PrepareAbort at once, and Dead removes the id from the
        cache: neither is ever completed."""
        raise AssertionError(f"a transition to {t.state} is never completed")

    def _valid_epoch(self, t: TxnTransit) -> bool:
        """The transit is of this producer id and epoch (as before a TV2 bump or an overflow)."""
        tv2 = t.client_transaction_version >= TV_2
        completes = t.state in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)
        overflow_complete = tv2 and completes and t.producer_epoch == 0
        prepares = t.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)
        epoch = t.last_producer_epoch if overflow_complete or (tv2 and prepares) else t.producer_epoch
        producer_id = t.previous_producer_id if overflow_complete else t.producer_id
        return epoch == self.producer_epoch and producer_id == self.producer_id

    def _valid_epoch_bump(self, t: TxnTransit) -> bool:
        return t.producer_epoch == self.producer_epoch + 1 or (t.producer_epoch == 0 and t.producer_id != self.producer_id)


_COMPLETE = {
    TransactionState.EMPTY: TransactionMetadata._complete_empty,
    TransactionState.ONGOING: TransactionMetadata._complete_ongoing,
    TransactionState.PREPARE_COMMIT: TransactionMetadata._complete_prepare,
    TransactionState.PREPARE_ABORT: TransactionMetadata._complete_prepare,
    TransactionState.COMPLETE_COMMIT: TransactionMetadata._complete_complete,
    TransactionState.COMPLETE_ABORT: TransactionMetadata._complete_complete,
    TransactionState.PREPARE_EPOCH_FENCE: TransactionMetadata._never,
    TransactionState.DEAD: TransactionMetadata._never,
}
