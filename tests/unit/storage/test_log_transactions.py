"""A log's transactions (KIP-98): markers end them, the first unstable offset bounds the last
stable offset, aborts go into ``.txnindex`` files with Kafka's 34-byte entries and outlive a
reopen, a truncation and a replay."""
import pytest
from storage_helpers import NOW, batch, config, marker, txn_batch

from tierlog.protocol.errors import ErrorCode
from tierlog.records import parse_header
from tierlog.records.control import COMMIT, build_marker, read_marker
from tierlog.storage import Log, ProducerStateError
from tierlog.storage.txn_index import AbortedTxn, decode_entries


@pytest.fixture
def log(tmp_path):
    log = Log.open(tmp_path / "t-0", config(), NOW)
    yield log
    log.close()


def test_marker_layout_round_trips():
    data = build_marker(9, 2, True, 7, NOW)
    h = parse_header(data, 0)
    assert h.is_control and h.is_transactional and h.producer_id == 9 and h.base_sequence == -1
    assert read_marker(data, h) == (COMMIT, 7)


def test_open_transactions_bound_the_first_unstable_offset_until_the_marker_is_replicated(log):
    assert log.first_unstable_offset(0) is None
    log.append(txn_batch(1, 0, 0), 0, NOW)                 # 0-1
    log.append(batch(2), 0, NOW)                           # 2-3, not transactional
    log.append(txn_batch(2, 0, 0), 0, NOW)                 # 4-5
    assert log.first_unstable_offset(6) == 0
    assert log.ongoing_transactions() == {1: (0, 0), 2: (0, 4)}
    log.append_marker(marker(1, 0, True), 0, NOW)          # 6: commits producer 1
    assert log.first_unstable_offset(6) == 0               # its marker is not below the high watermark yet
    assert log.first_unstable_offset(7) == 4
    log.append_marker(marker(2, 0, False), 0, NOW)         # 7: aborts producer 2
    assert log.first_unstable_offset(8) is None
    assert log.aborted_transactions(0, 8) == [AbortedTxn(2, 4, 7, 8)]
    assert log.aborted_transactions(8, 9) == []
    assert log.aborted_transactions(0, 4) == []            # the fetched range ends before it starts


def test_abort_index_entries_are_on_disk_and_survive_reopen_and_truncation(tmp_path):
    log = Log.open(tmp_path / "t-0", config(), NOW)
    log.append(txn_batch(1, 0, 0), 0, NOW)                 # 0-1
    log.append(txn_batch(2, 0, 0), 0, NOW)                 # 2-3
    log.append_marker(marker(1, 0, False), 0, NOW)         # 4: abort 1 while 2 is open
    files = list((tmp_path / "t-0").glob("*.txnindex"))
    assert [f.name for f in files] == ["00000000000000000000.txnindex"]
    assert decode_entries(files[0].read_bytes()) == [AbortedTxn(1, 0, 4, 2)]
    assert len(files[0].read_bytes()) == 34
    log.close()
    log = Log.open(tmp_path / "t-0", config(), NOW)
    assert log.aborted_transactions(0, 5) == [AbortedTxn(1, 0, 4, 2)]
    assert log.ongoing_transactions() == {2: (0, 2)}       # producer 2's transaction is still open
    log.truncate_to(4)                                      # the marker goes: transaction 1 is open again
    assert log.aborted_transactions(0, 5) == []
    assert log.ongoing_transactions() == {1: (0, 0), 2: (0, 2)}
    log.close()


def test_a_marker_older_than_the_producer_epoch_is_fenced(log):
    log.append(txn_batch(1, 3, 0), 0, NOW)
    with pytest.raises(ProducerStateError) as e:
        log.append_marker(marker(1, 2, True), 0, NOW)
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    log.append_marker(marker(1, 3, False), 0, NOW)
    assert log.ongoing_transactions() == {}


def test_a_marker_of_an_older_coordinator_epoch_is_fenced_on_the_leader_and_kept_by_a_follower(log, tmp_path):
    """Kafka's checkCoordinatorEpoch: a coordinator that lost its __transaction_state partition (a zombie)
    must not end a transaction the new one handles; a follower appends what its leader wrote."""
    log.append(txn_batch(1, 0, 0), 0, NOW)
    log.append_marker(marker(1, 0, True, coordinator_epoch=5), 0, NOW)
    log.append(txn_batch(1, 0, 2), 0, NOW)
    with pytest.raises(ProducerStateError) as e:
        log.append_marker(marker(1, 0, False, coordinator_epoch=4), 0, NOW)
    assert e.value.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.ongoing_transactions() == {1: (0, 3)}
    log.append_marker(marker(1, 0, False, coordinator_epoch=5), 0, NOW)    # the same epoch ends it
    assert log.ongoing_transactions() == {}
    follower = Log.open(tmp_path / "f-0", config(), NOW)
    follower.append_as_follower(log.read(0, 1 << 20).parts[0].read(), NOW)
    stale = marker(1, 0, True, coordinator_epoch=1)
    stale[:8] = (follower.log_end_offset).to_bytes(8, "big")
    follower.append_as_follower(stale, NOW)
    assert follower.log_end_offset == log.log_end_offset + 1
    follower.close()


def test_a_marker_without_data_here_is_appended_and_indexes_nothing(log):
    log.append_marker(marker(5, 0, False), 0, NOW)
    assert log.log_end_offset == 1 and log.aborted_transactions(0, 1) == []


def test_a_tv2_marker_bumps_the_epoch_and_the_next_transaction_starts_at_sequence_0(log):
    first = log.append(txn_batch(1, 0, 0), 0, NOW)                       # 0-1 at epoch 0
    log.append_marker(marker(1, 1, True), 0, NOW)                         # 2: the end bumped it to 1
    second = log.append(txn_batch(1, 1, 0), 0, NOW)                       # not a duplicate of the first
    assert (first.base_offset, second.base_offset) == (0, 3)
    with pytest.raises(ProducerStateError):
        log.append(txn_batch(1, 0, 2), 0, NOW)                            # the epoch before is fenced


def test_a_late_tv2_marker_at_the_current_epoch_is_fenced_and_leaves_the_next_transaction_open(log):
    """KIP-1228, found by the transaction simulation: a copy of transaction 0's COMMIT marker
    (epoch 1, its end's bump) delayed in the network until transaction 1 (epoch 1) was open
    here would have ended transaction 1 with transaction 0's outcome."""
    log.append(txn_batch(1, 0, 0), 0, NOW)                                # 0-1: transaction 0
    log.append_marker(marker(1, 1, True), 0, NOW, transaction_version=2)  # 2: its end bumped to epoch 1
    with pytest.raises(ProducerStateError) as e:
        log.append_marker(marker(1, 1, True), 0, NOW, transaction_version=2)     # its retry: done already
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    log.append(txn_batch(1, 1, 0), 0, NOW)                                # 3-4: transaction 1
    with pytest.raises(ProducerStateError):
        log.append_marker(marker(1, 1, True), 0, NOW, transaction_version=2)     # the late copy
    assert log.ongoing_transactions() == {1: (1, 3)}
    log.append_marker(marker(1, 2, False), 0, NOW, transaction_version=2)      # transaction 1's own end
    assert log.aborted_transactions(0, 6) == [AbortedTxn(1, 3, 5, 6)]
    log.append_marker(marker(1, 2, False), 0, NOW)                        # transaction.version 0/1: not newer is fine


def test_a_txn_offset_commit_batch_of_a_fenced_epoch_is_refused(log):
    """Found by the transaction simulation: a group coordinator's TxnOffsetCommit batch (no
    sequence) of epoch 0 delayed until the transaction's marker (epoch 1) was here opened a
    transaction whose offsets the producer's next COMMIT marker would have applied."""
    log.append(txn_batch(1, 0, -1), 0, NOW, False)                        # 0-1: the offsets of transaction 0
    log.append_marker(marker(1, 1, False), 0, NOW, transaction_version=2)  # 2: aborted, epoch 1
    with pytest.raises(ProducerStateError) as e:
        log.append(txn_batch(1, 0, -1), 0, NOW, False)                    # the delayed copy
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.ongoing_transactions() == {}
    log.append(txn_batch(1, 1, -1), 0, NOW, False)                        # the next transaction's offsets
    assert log.ongoing_transactions() == {1: (1, 3)}
