"""Several producers' transaction markers in one leader append (``Log.append_markers``, the
leader's side of a WriteTxnMarkers that carries several transactions): one write for all of
them, each checked against the producer state on its own, a refused one leaving the others
written, a second marker of one producer checked against the state the first one left."""
import pytest
from storage_helpers import NOW, config, marker, txn_batch

from tierlog.protocol.errors import ErrorCode
from tierlog.storage import Log, ProducerStateError
from tierlog.storage.txn_index import AbortedTxn


@pytest.fixture
def log(tmp_path):
    log = Log.open(tmp_path / "t-0", config(), NOW)
    writes = []
    real = log._append_batches
    log._append_batches = lambda records, headers, now_ms: (writes.append(len(headers)),
                                                           real(records, headers, now_ms))
    log.writes = writes
    yield log
    log.close()


def errors(results):
    return [r.error_code if isinstance(r, Exception) else ErrorCode.NONE for r in results]


def test_markers_of_several_producers_are_one_write_and_end_each_transaction(log):
    for pid in (1, 2, 3):
        log.append(txn_batch(pid, 0), 0, NOW)                               # 0-1, 2-3, 4-5
    log.writes.clear()
    results = log.append_markers([(marker(1, 0, True), 0), (marker(2, 0, False), 0), (marker(3, 1, True), 2)],
                                 0, NOW)
    assert errors(results) == [ErrorCode.NONE] * 3
    assert [r.base_offset for r in results] == [6, 7, 8]
    assert log.writes == [3]                                                # one write, three control batches
    assert log.ongoing_transactions() == {}
    assert log.first_unstable_offset(9) is None
    assert log.aborted_transactions(0, 9) == [AbortedTxn(2, 2, 7, 4)]      # the abort, indexed: producer 3 open (4) until 8


def test_a_refused_marker_leaves_the_others_of_its_write_written(log):
    log.append(txn_batch(1, 0), 0, NOW)                                     # 0-1
    log.append(txn_batch(2, 2), 0, NOW)                                     # 2-3, epoch 2
    log.append_marker(marker(3, 0, True, coordinator_epoch=5), 0, NOW)     # 4: producer 3's last coordinator epoch 5
    log.append(txn_batch(3, 0), 0, NOW)                                     # 5-6
    log.writes.clear()
    results = log.append_markers([(marker(1, 0, False), 0),
                                  (marker(2, 1, True), 0),                  # older than producer 2's epoch
                                  (marker(3, 0, True, coordinator_epoch=4), 1)], 0, NOW)   # an older coordinator
    assert errors(results) == [ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH,
                               ErrorCode.TRANSACTION_COORDINATOR_FENCED]
    assert results[0].base_offset == 7 and log.log_end_offset == 8 and log.writes == [1]
    assert log.ongoing_transactions() == {2: (2, 2), 3: (0, 5)}
    assert log.aborted_transactions(0, 8) == [AbortedTxn(1, 0, 7, 2)]


def test_a_second_marker_of_one_producer_is_checked_after_the_first_is_written(log):
    """A TV2 marker at the epoch the first one bumped to is a late copy (KIP-1228): checked
    together with the first, before it, it would have passed."""
    log.append(txn_batch(1, 0), 0, NOW)                                     # 0-1
    log.writes.clear()
    results = log.append_markers([(marker(1, 1, True), 2), (marker(1, 1, True), 2), (marker(2, 0, False), 0)],
                                 0, NOW)
    assert errors(results) == [ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.NONE]
    assert log.writes == [2] and log.log_end_offset == 4


def test_one_marker_refused_raises_as_before(log):
    log.append(txn_batch(1, 3), 0, NOW)
    with pytest.raises(ProducerStateError) as e:
        log.append_marker(marker(1, 2, True), 0, NOW)
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 2
