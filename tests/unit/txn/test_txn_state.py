"""A transactional id's states and transitions (Kafka's TransactionMetadata rules)."""
from dataclasses import replace

import pytest

from tierlog.protocol.errors import ErrorCode as E
from tierlog.txn import (
    NO_PRODUCER_EPOCH,
    TransactionMetadata,
    TransactionState,
    decode_value,
    encode_value,
    log_value,
    metadata_from_log,
)

S = TransactionState
T0 = 1_700_000_000_000
TV2 = 2


def _done(meta, transit):
    """The transit's record committed: apply it."""
    meta.complete_transition(transit)
    return meta


def _initialized(epoch_bumps=1) -> TransactionMetadata:
    meta = TransactionMetadata("tx", producer_id=4001, producer_epoch=NO_PRODUCER_EPOCH, timeout_ms=60_000,
                               last_update_timestamp_ms=T0)
    for _ in range(epoch_bumps):
        error, transit = meta.prepare_increment_producer_epoch(60_000, None, T0)
        assert error == E.NONE
        _done(meta, transit)
    return meta


def _ongoing(tv=0) -> TransactionMetadata:
    meta = _initialized()
    _done(meta, meta.prepare_add_partitions(frozenset({("t", 0)}), T0 + 10))
    meta.client_transaction_version = tv
    return meta


def test_states_ids_names_and_legal_predecessors_are_kafkas():
    assert [(s.id, s.kafka_name) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    ended = {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert {s: set(s.valid_previous_states) for s in S} == {
        S.EMPTY: ended, S.ONGOING: ended | {S.ONGOING}, S.PREPARE_COMMIT: {S.ONGOING},
        S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE}, S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
        S.COMPLETE_ABORT: {S.PREPARE_ABORT}, S.DEAD: ended, S.PREPARE_EPOCH_FENCE: {S.ONGOING}}
    assert S.from_kafka_name("PrepareEpochFence") is S.PREPARE_EPOCH_FENCE and S.from_kafka_name("x") is None
    assert [s for s in S if s.expiration_allowed] == [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT]


def test_init_producer_id_bumps_the_epoch_and_kip360_retries_and_fences():
    meta = _initialized()
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (S.EMPTY, 0, NO_PRODUCER_EPOCH)
    error, transit = meta.prepare_increment_producer_epoch(60_000, 0, T0 + 1)       # KIP-360: current epoch
    _done(meta, transit)
    assert (meta.producer_epoch, meta.last_producer_epoch) == (1, 0)
    error, transit = meta.prepare_increment_producer_epoch(60_000, 0, T0 + 2)       # a retry of that call
    assert (error, transit.producer_epoch) == (E.NONE, 1)
    meta.revert_pending()
    error, transit = meta.prepare_increment_producer_epoch(60_000, 5, T0 + 3)       # a zombie's epoch
    assert (error, transit, meta.pending_state) == (E.PRODUCER_FENCED, None, None)


def test_a_pending_transition_blocks_another_until_completed_or_reverted():
    meta = _initialized()
    meta.prepare_add_partitions(frozenset({("t", 0)}), T0)
    assert meta.pending_transition_in_progress
    with pytest.raises(AssertionError):
        meta.prepare_add_partitions(frozenset({("t", 1)}), T0)
    meta.revert_pending()
    assert meta.state is S.EMPTY and not meta.partitions


def test_a_transaction_runs_ongoing_prepare_complete():
    meta = _ongoing()
    assert (meta.state, meta.start_timestamp_ms, meta.partitions) == (S.ONGOING, T0 + 10, {("t", 0)})
    _done(meta, meta.prepare_add_partitions(frozenset({("u", 1)}), T0 + 20))
    assert meta.start_timestamp_ms == T0 + 10 and meta.partitions == {("t", 0), ("u", 1)}    # same transaction
    _done(meta, meta.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, T0 + 30))
    assert (meta.state, meta.producer_epoch) == (S.PREPARE_COMMIT, 0)          # no bump before TV2
    _done(meta, meta.prepare_complete(T0 + 40))
    assert (meta.state, meta.partitions, meta.last_update_timestamp_ms) == (S.COMPLETE_COMMIT, set(), T0 + 40)
    _done(meta, meta.prepare_add_partitions(frozenset({("t", 0)}), T0 + 50))
    assert meta.start_timestamp_ms == T0 + 50                                 # the next transaction


def test_illegal_transitions_are_programmer_errors():
    meta = _initialized()
    with pytest.raises(AssertionError):
        meta.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, T0)          # Empty -> PrepareCommit
    with pytest.raises(AssertionError):
        meta.prepare_complete(T0)
    ongoing = _ongoing()
    transit = ongoing.prepare_add_partitions(frozenset({("u", 0)}), T0)
    with pytest.raises(AssertionError):                                    # not the pending state
        ongoing.complete_transition(replace(transit, state=S.PREPARE_ABORT))
    with pytest.raises(AssertionError):                                    # partitions only ever added
        ongoing.complete_transition(replace(transit, partitions=frozenset({("u", 0)})))


def test_transaction_version_2_bumps_the_epoch_on_every_end():
    meta = _ongoing(tv=TV2)
    _done(meta, meta.prepare_abort_or_commit(S.PREPARE_ABORT, TV2, -1, T0 + 30))
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (S.PREPARE_ABORT, 1, 0)
    _done(meta, meta.prepare_complete(T0 + 40))
    assert (meta.state, meta.producer_id, meta.producer_epoch, meta.last_producer_epoch) == \
        (S.COMPLETE_ABORT, 4001, 1, 1)


def test_an_exhausted_epoch_moves_to_the_next_producer_id_when_the_transaction_completes():
    meta = _ongoing(tv=TV2)
    meta.producer_epoch = 32766                                             # the last one
    assert meta.epoch_exhausted
    _done(meta, meta.prepare_abort_or_commit(S.PREPARE_COMMIT, TV2, 5000, T0 + 30))
    assert (meta.producer_epoch, meta.next_producer_id) == (32767, 5000)
    _done(meta, meta.prepare_complete(T0 + 40))
    assert (meta.producer_id, meta.producer_epoch, meta.previous_producer_id, meta.next_producer_id) == \
        (5000, 0, 4001, -1)


def test_a_fenced_ongoing_transaction_aborts_at_the_bumped_epoch():
    meta = _ongoing()
    fence = meta.prepare_fence_producer_epoch()
    assert (fence.state, fence.producer_epoch) == (S.PREPARE_EPOCH_FENCE, 1)
    with pytest.raises(AssertionError):
        meta.complete_transition(fence)                                     # never written on its own
    meta.take_epoch_fence(fence.producer_epoch)
    _done(meta, meta.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, T0 + 30))
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (S.PREPARE_ABORT, 1, NO_PRODUCER_EPOCH)


def test_a_producer_id_rotation_starts_at_epoch_0():
    meta = _initialized()
    _done(meta, meta.prepare_producer_id_rotation(4002, 30_000, T0 + 5, record_last_epoch=True))
    assert (meta.producer_id, meta.producer_epoch, meta.last_producer_epoch, meta.previous_producer_id,
            meta.timeout_ms) == (4002, 0, 0, 4001, 30_000)
    with pytest.raises(AssertionError):
        _ongoing().prepare_producer_id_rotation(4003, 1, T0, record_last_epoch=False)


def test_what_a_transit_writes_loads_back_as_the_same_state():
    meta = _ongoing(tv=TV2)
    transit = meta.prepare_abort_or_commit(S.PREPARE_COMMIT, TV2, -1, T0 + 30)
    written = encode_value(log_value(transit), 1)
    _done(meta, transit)
    loaded = metadata_from_log("tx", decode_value(written))
    assert (loaded.state, loaded.producer_id, loaded.producer_epoch, loaded.partitions, loaded.timeout_ms,
            loaded.start_timestamp_ms, loaded.client_transaction_version) == \
        (meta.state, meta.producer_id, meta.producer_epoch, meta.partitions, meta.timeout_ms,
         meta.start_timestamp_ms, TV2)
    assert loaded.last_producer_epoch == NO_PRODUCER_EPOCH                  # not stored, as in Kafka
    _done(loaded, loaded.prepare_complete(T0 + 40))                         # a new coordinator resumes it
    assert loaded.state is S.COMPLETE_COMMIT
