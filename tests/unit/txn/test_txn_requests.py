"""The transaction coordinator's decisions for InitProducerId and AddPartitionsToTxn (Kafka's rules)."""
from tierlog.protocol.errors import ErrorCode as E
from tierlog.txn import TransactionState
from tierlog.txn.requests import (
    HeldAdd,
    ProducerIdAndEpoch,
    add_partitions,
    add_partitions_after,
    check_init_producer_id,
    complete_end_txn,
    end_txn,
    init_producer_id,
    new_transaction_metadata,
    verify_partitions,
)

S = TransactionState
T0 = 1_700_000_000_000
MAX_TIMEOUT = 900_000


def _ids(start=5000):
    counter = iter(range(start, start + 100))
    return lambda: next(counter)


def _init(meta, expected=None, new_ids=None):
    decision = init_producer_id(meta, 60_000, expected, new_ids or _ids(), T0)
    if decision.transit is not None and decision.transit.state is not S.PREPARE_EPOCH_FENCE:
        meta.complete_transition(decision.transit)
    return decision


def _ready():
    meta = new_transaction_metadata("tx", 4001, 60_000, T0)
    assert _init(meta).error == E.NONE
    return meta


def _ongoing():
    meta = _ready()
    meta.complete_transition(add_partitions(meta, 4001, 0, [("t", 0)], T0).transit)
    return meta


def test_the_requests_own_checks():
    assert check_init_producer_id("", 60_000, MAX_TIMEOUT) == E.INVALID_REQUEST
    assert check_init_producer_id("tx", MAX_TIMEOUT + 1, MAX_TIMEOUT) == E.INVALID_TRANSACTION_TIMEOUT
    assert check_init_producer_id("tx", 0, MAX_TIMEOUT) == E.INVALID_TRANSACTION_TIMEOUT
    assert check_init_producer_id("tx", MAX_TIMEOUT, MAX_TIMEOUT) == E.NONE


def test_a_new_transactional_id_starts_at_epoch_0_and_each_init_fences_the_last():
    meta = _ready()
    assert (meta.state, meta.producer_id, meta.producer_epoch) == (S.EMPTY, 4001, 0)
    assert _init(meta).transit.producer_epoch == 1                 # a second producer: the first is fenced


def test_init_during_a_transaction_fences_it_and_asks_the_client_to_retry():
    meta = _ongoing()
    decision = _init(meta)
    assert (decision.transit.state, decision.transit.producer_epoch) == (S.PREPARE_EPOCH_FENCE, 1)
    assert _init(meta).error == E.CONCURRENT_TRANSACTIONS            # the fence is still in flight


def test_init_while_a_transaction_completes_is_concurrent():
    meta = _ongoing()
    meta.complete_transition(meta.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, T0))
    assert _init(meta).error == E.CONCURRENT_TRANSACTIONS


def test_kip360_a_producer_recovers_with_its_own_id_and_a_zombie_is_fenced():
    meta = _ready()
    assert _init(meta, ProducerIdAndEpoch(4001, 0)).transit.producer_epoch == 1
    assert _init(meta, ProducerIdAndEpoch(4001, 0)).transit.producer_epoch == 1    # the retry: no second bump
    assert _init(meta, ProducerIdAndEpoch(3999, 0)).error == E.PRODUCER_FENCED     # another producer id


def test_an_exhausted_epoch_moves_to_a_new_producer_id():
    meta = _ready()
    meta.producer_epoch = 32766
    decision = _init(meta, ProducerIdAndEpoch(4001, 32766), new_ids=_ids(7000))
    assert (decision.transit.producer_id, decision.transit.producer_epoch) == (7000, 0)
    assert (meta.producer_id, meta.previous_producer_id, meta.last_producer_epoch) == (7000, 4001, 32766)
    # the answer was lost: the retry names the previous id with its exhausted epoch and is not fenced
    assert _init(meta, ProducerIdAndEpoch(4001, 32766)).error == E.NONE


def test_add_partitions_checks_the_producer_and_skips_a_write_for_known_partitions():
    meta = _ready()
    assert add_partitions(None, 4001, 0, [("t", 0)], T0).error == E.INVALID_PRODUCER_ID_MAPPING
    assert add_partitions(meta, 4002, 0, [("t", 0)], T0).error == E.INVALID_PRODUCER_ID_MAPPING
    assert add_partitions(meta, 4001, 1, [("t", 0)], T0).error == E.PRODUCER_FENCED
    first = add_partitions(meta, 4001, 0, [("t", 0)], T0)
    assert add_partitions(meta, 4001, 0, [("t", 1)], T0).error == E.CONCURRENT_TRANSACTIONS   # first in flight
    meta.complete_transition(first.transit)
    assert add_partitions(meta, 4001, 0, [("t", 0)], T0) == (E.NONE, None)
    assert add_partitions(meta, 4001, 0, [("t", 0), ("t", 1)], T0).transit.partitions == {("t", 0), ("t", 1)}


def test_adds_held_while_the_markers_are_written_are_decided_as_complete_leaves_the_id():
    meta = _ongoing()
    meta.complete_transition(meta.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, T0))
    complete = meta.prepare_complete(T0 + 5)
    ahead = meta.projected(complete)
    assert (meta.state, meta.partitions, ahead.state, ahead.partitions) == (S.PREPARE_COMMIT, {("t", 0)},
                                                                            S.COMPLETE_COMMIT, set())
    held = [HeldAdd(4001, 0, frozenset({("t", 1)})), HeldAdd(4001, 1, frozenset({("t", 2)})),
            HeldAdd(4001, 0, frozenset({("t", 1), ("t", 2)}))]
    errors, ongoing = add_partitions_after(ahead, held, T0 + 6)
    assert errors == [E.NONE, E.PRODUCER_FENCED, E.NONE]
    assert (ongoing.state, ongoing.partitions, ongoing.start_timestamp_ms) == (S.ONGOING, {("t", 1), ("t", 2)},
                                                                               T0 + 6)
    # both records committed in one batch: Complete* applied, then the Ongoing built on it
    meta.complete_transition(complete)
    meta.complete_chained(ongoing)
    assert (meta.state, meta.partitions, meta.pending_state) == (S.ONGOING, {("t", 1), ("t", 2)}, None)
    # only a fenced producer held: nothing to write behind Complete*
    other = _ongoing()
    other.complete_transition(other.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, T0))
    assert add_partitions_after(other.projected(other.prepare_complete(T0)), held[1:2], T0) == ([E.PRODUCER_FENCED],
                                                                                                  None)


def test_verification_answers_per_partition():
    meta = _ongoing()
    assert verify_partitions(meta, 4001, 0, [("t", 0), ("t", 1)]) == {("t", 0): E.NONE,
                                                                      ("t", 1): E.TRANSACTION_ABORTABLE}
    assert verify_partitions(meta, 4001, 3, [("t", 0)]) == {("t", 0): E.PRODUCER_FENCED}
    assert verify_partitions(None, 4001, 0, [("t", 0)]) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
    meta.complete_transition(meta.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, T0))
    assert verify_partitions(meta, 4001, 0, [("t", 0)]) == {("t", 0): E.CONCURRENT_TRANSACTIONS}


def _end(meta, epoch, commit=True, tv=0, from_client=True, pid=4001, new_ids=None):
    return end_txn(meta, pid, epoch, commit, from_client, tv, new_ids or _ids(), T0)


def _ended(meta, decision, commit=True):
    """Prepare* written, then the markers: Complete* written."""
    meta.complete_transition(decision.transit)
    complete = complete_end_txn(meta, decision.transit.producer_id, decision.transit.last_producer_epoch
                                if meta.client_transaction_version >= 2 else decision.transit.producer_epoch,
                                commit, T0)
    assert complete.error == E.NONE
    meta.complete_transition(complete.transit)
    return meta


def test_end_txn_v1_commits_and_a_repeat_is_answered_without_a_write():
    meta = _ongoing()
    decision = _end(meta, 0)
    assert (decision.error, decision.transit.state, decision.transit.producer_epoch) == (E.NONE, S.PREPARE_COMMIT, 0)
    assert _end(meta, 0).error == E.CONCURRENT_TRANSACTIONS                     # the write is in flight
    meta.complete_transition(decision.transit)
    assert _end(meta, 0).error == E.CONCURRENT_TRANSACTIONS                     # markers being written
    assert _end(meta, 0, commit=False).error == E.INVALID_TXN_STATE             # contradicts the commit
    complete = complete_end_txn(meta, 4001, 0, True, T0)
    meta.complete_transition(complete.transit)
    assert _end(meta, 0) == (E.NONE, None, 4001, 0)                             # a retry of the commit
    assert _end(meta, 0, commit=False).error == E.INVALID_TXN_STATE


def test_end_txn_checks_the_producer_and_refuses_an_empty_transaction():
    meta = _ongoing()
    assert end_txn(None, 4001, 0, True, True, 0, _ids(), T0).error == E.INVALID_PRODUCER_ID_MAPPING
    assert _end(meta, 0, pid=4002).error == E.INVALID_PRODUCER_ID_MAPPING
    assert _end(meta, 1).error == E.PRODUCER_FENCED
    assert _end(_ready(), 0).error == E.INVALID_TXN_STATE


def test_end_txn_v2_bumps_the_epoch_and_recognises_its_retry():
    meta = _ongoing()
    decision = _end(meta, 0, tv=2)
    assert (decision.transit.producer_epoch, decision.transit.last_producer_epoch) == (1, 0)
    _ended(meta, decision)
    assert (meta.state, meta.producer_epoch) == (S.COMPLETE_COMMIT, 1)
    assert _end(meta, 0, tv=2) == (E.NONE, None, 4001, 1)                       # the retry, with the new epoch
    assert _end(meta, 1, tv=2).error == E.PRODUCER_FENCED                       # epoch 1 has no transaction


def test_end_txn_v2_on_an_exhausted_epoch_moves_to_a_new_producer_id_and_a_retry_still_works():
    meta = _ongoing()
    meta.producer_epoch = 32766
    decision = _end(meta, 32766, tv=2, new_ids=_ids(9000))
    assert (decision.transit.producer_epoch, decision.transit.next_producer_id) == (32767, 9000)
    _ended(meta, decision)
    assert (meta.producer_id, meta.producer_epoch, meta.previous_producer_id) == (9000, 0, 4001)
    assert _end(meta, 32766, tv=2) == (E.NONE, None, 9000, 0)                   # the retry across the overflow


def test_the_coordinators_abort_takes_a_pending_fence():
    meta = _ongoing()
    fence = init_producer_id(meta, 60_000, None, _ids(), T0).transit
    decision = _end(meta, fence.producer_epoch, commit=False, from_client=False)
    assert (decision.transit.state, decision.transit.producer_epoch) == (S.PREPARE_ABORT, 1)
    _ended(meta, decision, commit=False)
    assert (meta.state, meta.producer_epoch) == (S.COMPLETE_ABORT, 1)
    assert _end(meta, 0, commit=False).error == E.PRODUCER_FENCED              # the fenced producer's own abort
