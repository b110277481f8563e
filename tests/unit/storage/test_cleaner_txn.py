"""The cleaner's transaction rules (Kafka's CleanedTransactionMetadata) on batch headers: aborted
data goes, an ABORT marker stays while its data was there and its index entry with it, a COMMIT
marker may go once none of its data is left, other producers are untouched; and the marker
verdicts of ``filter_batch`` (delete horizon first, then gone)."""
from tierlog.records import Record, build_batch, parse_header
from tierlog.records.control import ABORT, COMMIT, build_marker
from tierlog.records.filtered import filtered_batch
from tierlog.storage.cleaner_rules import OffsetMap, filter_batch
from tierlog.storage.cleaner_txn import CleanedTransactions, aborted_overlapping
from tierlog.storage.txn_index import AbortedTxn

NOW = 1_700_000_000_000


def data(pid: int, base: int, count: int = 2, transactional: bool = True):
    records = [Record(base + i, NOW, b"k%d" % i, b"v") for i in range(count)]
    return parse_header(build_batch(records, base_offset=base, producer_id=pid, producer_epoch=0,
                                    base_sequence=0, transactional=transactional))


def _at(pid: int, offset: int, commit: bool) -> bytearray:
    """A marker batch at ``offset``."""
    batch = bytearray(build_marker(pid, 0, commit, 1, NOW))
    batch[0:8] = offset.to_bytes(8, "big")
    return batch


def test_aborted_data_goes_and_its_marker_stays_while_the_data_was_there():
    txns = CleanedTransactions()
    entry = AbortedTxn(5, 10, 14, 15)
    txns.add_aborted(aborted_overlapping([AbortedTxn(4, 0, 3, 4), entry], 8, 20))   # (4, ...) ends before
    assert not txns.on_batch(data(5, 8, transactional=False))    # not transactional: never aborted data
    assert not txns.on_batch(data(6, 9, count=1))                # another producer's transaction
    assert txns.on_batch(data(5, 10)) and txns.on_batch(data(5, 12))
    assert not txns.on_marker(parse_header(_at(5, 14, False)), ABORT)
    assert txns.retained == [entry]
    assert not txns.on_batch(data(5, 16))                        # its next transaction is not aborted
    assert not txns.on_marker(parse_header(_at(6, 18, True)), COMMIT)   # producer 6's data was here


def test_markers_whose_data_is_gone_may_go():
    txns = CleanedTransactions()
    txns.add_aborted([AbortedTxn(5, 0, 4, 5)])
    assert txns.on_marker(parse_header(_at(5, 4, False)), ABORT)   # its data was cleaned before
    assert txns.on_marker(parse_header(_at(6, 5, True)), COMMIT)
    assert txns.on_marker(parse_header(_at(6, 6, True)), None)     # an empty control batch
    assert not txns.on_marker(parse_header(_at(6, 7, True)), -1)   # another control type stays
    assert txns.retained == []


def test_a_marker_that_may_go_gets_a_delete_horizon_first_then_goes_past_it():
    batch = _at(5, 4, False)
    header = parse_header(batch)
    records = [Record(4, NOW, b"\0\0\0\0", b"\0\0\0\0\0\1")]
    kept = filter_batch(header, records, OffsetMap(10), NOW, 1000, False, discard=False)
    assert kept.copy
    first = filter_batch(header, records, OffsetMap(10), NOW, 1000, False, discard=True)
    assert not first.copy and first.records and first.delete_horizon_ms == NOW + 1000
    horizoned = filtered_batch(header, first.records, first.delete_horizon_ms)
    later = parse_header(horizoned)
    assert later.is_control and later.has_delete_horizon
    assert filter_batch(later, records, OffsetMap(10), NOW + 999, 1000, False, discard=True).copy
    gone = filter_batch(later, records, OffsetMap(10), NOW + 1000, 1000, False, discard=True)
    assert not gone.copy and not gone.records and not gone.keep_empty
    assert filter_batch(data(5, 0), [], OffsetMap(10), NOW, 1000, True, discard=True).keep_empty
