"""What the transaction coordinator decides for InitProducerId and AddPartitionsToTxn before it
writes anything (Kafka's ``TransactionCoordinator.handleInitProducerId`` /
``handleAddPartitionsToTransaction`` / ``handleVerifyPartitionsInTransaction``), sans-IO.

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
- Verification (v4+ VerifyOnly, KIP-890 part 1): per partition NONE if it is in
  the transaction, else TRANSACTION_ABORTABLE; the producer checks as above.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from tierlog.protocol.errors import ErrorCode

from .state import (
    NO_PRODUCER_EPOCH,
    TransactionMetadata,
    TransactionState,
    TxnTransit,
    is_epoch_exhausted,
)

__all__ = ["Decision", "ProducerIdAndEpoch", "add_partitions", "check_init_producer_id", "init_producer_id",
           "new_transaction_metadata", "verify_partitions"]

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
    wanted = frozenset(partitions)
    if meta.pending_transition_in_progress or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return Decision(ErrorCode.CONCURRENT_TRANSACTIONS)
    if meta.state is S.ONGOING and wanted <= meta.partitions:
        return Decision(ErrorCode.NONE)
    return Decision(ErrorCode.NONE, meta.prepare_add_partitions(wanted, now_ms))


def verify_partitions(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int,
                      partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """KIP-890 part 1: each partition's error for a leader's VerifyOnly AddPartitionsToTxn."""
    partitions = list(partitions)
    error = _producer_error(meta, producer_id, producer_epoch)
    if not error and meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        error = ErrorCode.CONCURRENT_TRANSACTIONS
    if error:
        return dict.fromkeys(partitions, error)
    return {p: ErrorCode.NONE if p in meta.partitions else ErrorCode.TRANSACTION_ABORTABLE for p in partitions}


def _producer_error(meta: TransactionMetadata | None, producer_id: int, producer_epoch: int) -> int:
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != producer_epoch:
        return ErrorCode.PRODUCER_FENCED
    return ErrorCode.NONE
