"""What the transaction coordinator decides for InitProducerId, AddPartitionsToTxn and EndTxn
before it writes anything (Kafka's ``TransactionCoordinator.handleInitProducerId`` /
``handleAddPartitionsToTransaction`` / ``handleVerifyPartitionsInTransaction`` /
``endTransaction``), sans-IO.

Each answers an error, or a ``TxnTransit`` to append to ``__transaction_state``
(acks=all) and complete once committed.  Rules:

- InitProducerId: a null transactional id is not the coordinator's (an
  idempotent producer); "" is INVALID_REQUEST; a timeout above
  ``transaction.max.timeout.ms`` (or not positive) INVALID_TRANSACTION_TIMEOUT.
  A transition in flight or a transaction being completed (Prepare*) answers
  CONCURRENT_TRANSACTIONS (retriable).  KIP-360: a given producer id must be the
  current one, or the previous one with an exhausted epoch (a retry of a bump),
  or the metadata must be new; else PRODUCER_FENCED.  An ended transaction bumps
  the epoch, or moves to a new producer id when the epoch is exhausted; an
  Ongoing one is fenced (PrepareEpochFence, then aborted; the client gets
  CONCURRENT_TRANSACTIONS and retries).
- AddPartitionsToTxn (client versions): unknown transactional id or another
  producer id INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED, a
  transition in flight or Prepare* CONCURRENT_TRANSACTIONS; partitions already in
  an Ongoing transaction answer NONE without a write.
- Adds held while the id's transaction completes (``add_partitions_after``): decided
  on the metadata as Complete* will leave it, so that their Ongoing record is written
  in the same batch as Complete* (one replicated write fewer per transaction for a
  transaction.version 1 client, whose next transaction waits for the markers).
- Verification (v4+ VerifyOnly, KIP-890 part 1): per partition NONE if it is in
  the transaction, else TRANSACTION_ABORTABLE; the producer checks as above.
- EndTxn (``end_txn``, also the coordinator's own abort after a fence): another
  producer id INVALID_PRODUCER_ID_MAPPING (except a TV2 retry across an epoch
  overflow); a wrong epoch PRODUCER_FENCED (TV2: a retry shows the stored epoch =
  sent + 1; TV1: the sent epoch must be the stored one); a transition in flight
  CONCURRENT_TRANSACTIONS; Ongoing -> PrepareCommit / PrepareAbort (TV2 bumps the
  epoch and takes a new producer id when it is exhausted); repeating a completed
  or completing result answers NONE (with the producer id and epoch) or
  CONCURRENT_TRANSACTIONS, contradicting it INVALID_TXN_STATE, as does ending an
  Empty transaction.  ``complete_end_txn``: once Prepare* is written, the
  Complete* transit to write after the markers (the client is answered then).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from tierlog.protocol.errors import ErrorCode

from .state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TV_2,
    TransactionMetadata,
    TransactionState,
    TxnTransit,
    is_epoch_exhausted,
)

__all__ = ["Decision", "EndTxnDecision", "HeldAdd", "ProducerIdAndEpoch", "add_partitions", "add_partitions_after",
           "check_init_producer_id", "complete_end_txn", "end_txn", "init_producer_id", "new_transaction_metadata",
           "verify_partitions"]

S = TransactionState


class ProducerIdAndEpoch(NamedTuple):
    producer_id: int
    epoch: int


class Decision(NamedTuple):
    """An error to answer (NONE with no transit: answer success without a write), or the transit to write."""

    error: int = ErrorCode.NONE
    transit: TxnTransit | None = None


def check_init_producer_id(transactional_id: str, timeout_ms: int, max_timeout_ms: int) -> int:
    """The request's own checks, before any state is looked up (``transactional_id`` not None)."""
    if transactional_id == "":
        return ErrorCode.INVALID_REQUEST
    if not 0 < timeout_ms <= max_timeout_ms:         # transaction.max.timeout.ms
        return ErrorCode.INVALID_TRANSACTION_TIMEOUT
    return ErrorCode.NONE


def new_transaction_metadata(transactional_id: str, producer_id: int, timeout_ms: int,
                             now_ms: int) -> TransactionMetadata:
    """A transactional id seen for the first time: Empty, no epoch yet (the first bump makes it 0)."""
    return TransactionMetadata(transactional_id, producer_id, NO_PRODUCER_EPOCH, timeout_ms, now_ms)


def init_producer_id(meta: TransactionMetadata, timeout_ms: int, expected: ProducerIdAndEpoch | None,
                     new_producer_id: Callable[[], int], now_ms: int) -> Decision:
    if meta.pending_transition_in_progress or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return Decision(ErrorCode.CONCURRENT_TRANSACTIONS)
    if expected is not None and not _known_producer(meta, expected):
        return Decision(ErrorCode.PRODUCER_FENCED)
    if meta.state is S.ONGOING:
        return Decision(ErrorCode.NONE, meta.prepare_fence_producer_epoch())
    assert meta.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT), f"{meta.transactional_id}: {meta.state}"
    if meta.epoch_exhausted and (expected is None or expected.epoch == meta.producer_epoch):
        return Decision(ErrorCode.NONE, meta.prepare_producer_id_rotation(
            new_producer_id(), timeout_ms, now_ms, record_last_epoch=expected is not None))
    error, transit = meta.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected.epoch,
                                                           now_ms)
    return Decision(error, transit)


def _known_producer(meta: TransactionMetadata, expected: ProducerIdAndEpoch) -> bool:
    """KIP-360: new metadata, the current producer id, or the previous one right after an
    exhausted epoch moved it (a retry whose answer was lost)."""
    return (meta.producer_epoch == NO_PRODUCER_EPOCH or expected.producer_id == meta.producer_id
            or (expected.producer_id == meta.previous_producer_id and is_epoch_exhausted(expected.epoch)))


def add_partitions(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int,
                   partitions: Iterable[tuple[str, int]], now_ms: int) -> Decision:
    error = _producer_error(meta, producer_id, producer_epoch)
    if error:
        return Decision(error)
    assert meta is not None                     # _producer_error answers a missing transaction
    wanted = frozenset(partitions)
    if meta.pending_transition_in_progress or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return Decision(ErrorCode.CONCURRENT_TRANSACTIONS)
    if meta.state is S.ONGOING and wanted <= meta.partitions:
        return Decision(ErrorCode.NONE)
    return Decision(ErrorCode.NONE, meta.prepare_add_partitions(wanted, now_ms))


class HeldAdd(NamedTuple):
    """An AddPartitionsToTxn / AddOffsetsToTxn held while its id's transaction completes."""

    producer_id: int
    producer_epoch: int
    partitions: frozenset[tuple[str, int]]


def add_partitions_after(ahead: TransactionMetadata, held: Iterable[HeldAdd],
                         now_ms: int) -> tuple[list[int], TxnTransit | None]:
    """The adds held while the markers were written, decided on ``ahead`` (the metadata as the
    Complete* transit leaves it, ``TransactionMetadata.projected``): each one's error, and the one
    Ongoing transit with every partition accepted, to write in the same batch as Complete*."""
    errors: list[int] = []
    latest: TxnTransit | None = None
    for add in held:
        decision = add_partitions(ahead, add.producer_id, add.producer_epoch, add.partitions, now_ms)
        errors.append(decision.error)
        if decision.transit is not None:        # applied to the copy: the next add builds on it
            ahead.complete_transition(decision.transit)
            latest = decision.transit
    return errors, latest


def verify_partitions(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int,
                      partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """KIP-890 part 1: each partition's error for a leader's VerifyOnly AddPartitionsToTxn."""
    partitions = list(partitions)
    error = _producer_error(meta, producer_id, producer_epoch)
    if not error and meta is not None and meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        error = ErrorCode.CONCURRENT_TRANSACTIONS
    if error or meta is None:
        return dict.fromkeys(partitions, error)
    return {p: ErrorCode.NONE if p in meta.partitions else ErrorCode.TRANSACTION_ABORTABLE for p in partitions}


def _producer_error(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int) -> int:
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != producer_epoch:
        return ErrorCode.PRODUCER_FENCED
    return ErrorCode.NONE


class EndTxnDecision(NamedTuple):
    """EndTxn's error, or the Prepare* transit to write; NONE without a transit repeats a completed
    end (answered with ``producer_id`` / ``producer_epoch``)."""

    error: int = ErrorCode.NONE
    transit: TxnTransit | None = None
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


_ENDING = {S.PREPARE_COMMIT: True, S.PREPARE_ABORT: False}
_ENDED = {S.COMPLETE_COMMIT: True, S.COMPLETE_ABORT: False}


def end_txn(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int, commit: bool,
            from_client: bool, client_transaction_version: int, new_producer_id: Callable[[], int],
            now_ms: int) -> EndTxnDecision:
    """Kafka's ``endTransaction`` before the append (``from_client`` False: the coordinator's abort of
    a fenced or timed-out transaction, which takes the pending PrepareEpochFence)."""
    if meta is None:
        return EndTxnDecision(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    fencing = meta.pending_state is S.PREPARE_EPOCH_FENCE
    tv2 = not fencing and meta.client_transaction_version >= TV_2
    retry_on_overflow = tv2 and meta.previous_producer_id == producer_id and producer_epoch == SHORT_MAX - 1 \
        and meta.producer_epoch == 0
    if meta.producer_id != producer_id and not retry_on_overflow:
        return EndTxnDecision(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    if not _valid_end_epoch(meta, producer_epoch, from_client, tv2, retry_on_overflow):
        return EndTxnDecision(ErrorCode.PRODUCER_FENCED)
    if meta.pending_transition_in_progress and not fencing:
        return EndTxnDecision(ErrorCode.CONCURRENT_TRANSACTIONS)
    if meta.state is S.ONGOING:
        return _prepare_end(meta, producer_epoch, commit, fencing, client_transaction_version, new_producer_id, now_ms)
    if meta.state in _ENDED and _ENDED[meta.state] == commit:
        return EndTxnDecision(ErrorCode.NONE, None, meta.producer_id, meta.producer_epoch)
    if meta.state in _ENDING and _ENDING[meta.state] == commit:
        return EndTxnDecision(ErrorCode.CONCURRENT_TRANSACTIONS)
    assert meta.state not in (S.DEAD, S.PREPARE_EPOCH_FENCE), f"{meta.transactional_id}: {meta.state}"
    return EndTxnDecision(ErrorCode.INVALID_TXN_STATE)


def _valid_end_epoch(meta: TransactionMetadata, producer_epoch: int, from_client: bool, tv2: bool,
                     retry_on_overflow: bool) -> bool:
    if not tv2:     # TV1: clients never bump the epoch without the coordinator
        return (not from_client or producer_epoch == meta.producer_epoch) and producer_epoch >= meta.producer_epoch
    retry_on_bump = meta.producer_epoch == producer_epoch + 1      # the stored epoch is the one this end bumped to
    if meta.state in _ENDING:
        return retry_on_bump
    if meta.state in _ENDED:
        return retry_on_bump or retry_on_overflow
    return producer_epoch == meta.producer_epoch


def _prepare_end(meta: TransactionMetadata, producer_epoch: int, commit: bool, fencing: bool,
                 client_transaction_version: int, new_producer_id: Callable[[], int], now_ms: int) -> EndTxnDecision:
    next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
    next_producer_id = NO_PRODUCER_ID
    if client_transaction_version >= TV_2 and not fencing and meta.epoch_exhausted:
        next_producer_id = new_producer_id()
    if fencing:
        if commit:          # only the coordinator's abort takes a fence
            return EndTxnDecision(ErrorCode.CONCURRENT_TRANSACTIONS)
        meta.take_epoch_fence(producer_epoch)
    return EndTxnDecision(ErrorCode.NONE, meta.prepare_abort_or_commit(next_state, client_transaction_version,
                                                                       next_producer_id, now_ms))


def complete_end_txn(meta: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                     now_ms: int) -> Decision:
    """After the Prepare* record is committed: the Complete* transit (written once the markers
    are), or the error to answer instead (the coordinator epoch check, NOT_COORDINATOR, is the
    shell's)."""
    if meta.producer_id != producer_id:
        return Decision(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    bumped = meta.client_transaction_version >= TV_2 and meta.producer_epoch == producer_epoch + 1
    if meta.producer_epoch != producer_epoch and not bumped:
        return Decision(ErrorCode.PRODUCER_FENCED)
    if meta.pending_transition_in_progress:
        return Decision(ErrorCode.CONCURRENT_TRANSACTIONS)
    if meta.state not in _ENDING or _ENDING[meta.state] != commit:
        assert meta.state not in (S.DEAD, S.PREPARE_EPOCH_FENCE), f"{meta.transactional_id}: {meta.state}"
        return Decision(ErrorCode.INVALID_TXN_STATE)
    return Decision(ErrorCode.NONE, meta.prepare_complete(now_ms))
