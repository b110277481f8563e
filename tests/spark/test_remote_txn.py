"""read_committed for direct reads (no Spark, no broker): where they stop, and an executor's read
dropping what the uploaded ``.txnindex`` objects list, as a consumer drops it from a broker's answer."""
import uuid

from tierlog.records import Record, build_batch
from tierlog.records.control import build_marker
from tierlog.spark.remote_read import read_segment_range
from tierlog.spark.remote_store import StoreView
from tierlog.spark.remote_txn import aborted_for, stable_end
from tierlog.storage.producer_snapshot_codec import SnapshotEntry, encode_snapshot
from tierlog.storage.txn_index import AbortedTxn, encode_entry
from tierlog.tiered import (
    FsObjectStore,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteSegmentStore,
    TopicIdPartition,
)

TP = TopicIdPartition(bytes(range(16)), "txns", 0)


def _snapshot(pid, first):
    return SnapshotEntry(pid, 0, 0, 0, 0, 0, 0, first)


def test_direct_reads_stop_at_the_oldest_transaction_open_at_the_end_of_remote_storage():
    assert stable_end([], 99) == 100
    assert stable_end([_snapshot(7, -1), _snapshot(8, -1)], 99) == 100        # every transaction decided
    assert stable_end([_snapshot(7, 60), _snapshot(8, 42), _snapshot(9, -1)], 99) == 42


def test_the_search_reads_later_indexes_only_until_one_completes_it():
    def indexes():
        yield [AbortedTxn(7, 0, 4, 4)]                    # another transaction was open at the marker: go on
        yield [AbortedTxn(8, 5, 12, 30), AbortedTxn(9, 40, 41, 42)]      # 30 >= the end: complete
        raise AssertionError("read one index too many")
    assert aborted_for(indexes(), 3, 20) == [{"ProducerId": 7, "FirstOffset": 0}, {"ProducerId": 8, "FirstOffset": 5}]


def _at(batch: bytes, base_offset: int) -> bytes:
    return base_offset.to_bytes(8, "big") + batch[8:]      # the base offset is outside the CRC


def _data(pid, base, *values):
    return _at(build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], producer_id=pid,
                           producer_epoch=0, base_sequence=0, transactional=True), base)


def _marker(pid, base, commit):
    return _at(build_marker(pid, 0, commit, 0, 0), base)


def _upload(tmp_path, store, start, end, log, txnindex=(), snapshot=None):
    local = tmp_path / f"local-{start}"
    local.mkdir()
    (local / "0.log").write_bytes(log)
    (local / "0.index").write_bytes(bytes(8))
    (local / "0.timeindex").write_bytes(bytes(12))
    txn = None
    if txnindex:
        txn = local / "0.txnindex"
        txn.write_bytes(b"".join(encode_entry(e) for e in txnindex))
    snap = None
    if snapshot is not None:
        snap = local / "0.snapshot"
        snap.write_bytes(encode_snapshot(snapshot))
    meta = RemoteLogSegmentMetadata(RemoteLogSegmentId(TP, uuid.uuid4().bytes), start, end, 0, 1, 0, ((0, start),),
                                    len(log))
    RemoteSegmentStore(store).copy_log_segment(
        meta, LogSegmentData(local / "0.log", local / "0.index", local / "0.timeindex", snap, b"0\n1\n0 0\n", txn))
    return meta


def _two_segments(tmp_path):
    """Producer 7 aborts a transaction whose marker is in the next segment; 8 commits one around it."""
    store = FsObjectStore(tmp_path / "remote")
    first = _upload(tmp_path, store, 0, 3, b"".join([_data(7, 0, b"a0", b"a1"), _data(8, 2, b"c0"),
                                                     _data(7, 3, b"a2")]))
    second = _upload(tmp_path, store, 4, 9, b"".join([
        _marker(7, 4, False), _data(8, 5, b"c1"), _marker(8, 6, True), _data(7, 7, b"k0"), _marker(7, 8, True),
        _at(build_batch([Record(0, 0, None, b"plain")]), 9)]),
        txnindex=[AbortedTxn(7, 0, 4, 2)], snapshot=[_snapshot(7, -1), _snapshot(8, -1)])
    return store, first, second


def _values(store, segment, start, end, txn_segments):
    return [bytes(v) for b in read_segment_range(store, segment, start, end, include_headers=False,
                                                 fail_on_data_loss=True, txn_segments=txn_segments)
            for v in b.column("value").to_pylist()]


def test_an_executor_drops_the_aborted_data_a_later_segment_s_txnindex_lists(tmp_path):
    store, first, second = _two_segments(tmp_path)
    assert _values(store, first, 0, 4, None) == [b"a0", b"a1", b"c0", b"a2"]       # read_uncommitted
    assert _values(store, first, 0, 4, (second,)) == [b"c0"]
    assert _values(store, first, 1, 4, (second,)) == [b"c0"]                        # from inside the transaction
    assert _values(store, second, 4, 10, (second,)) == [b"c1", b"k0", b"plain"]    # markers are never rows
    # the leak the index prevents: without it the aborted records are there
    assert _values(store, first, 0, 4, ()) == [b"a0", b"a1", b"c0", b"a2"]


def test_the_driver_finds_the_indexed_segments_and_the_stable_end(tmp_path):
    store, first, second = _two_segments(tmp_path)
    view = StoreView.of_topics(store, ["txns"])
    assert view.transaction_indexed(("txns", 0), None, [first, second]) == (second,)
    assert view.stable_end([first, second]) == 10                  # the newest snapshot: nothing open
    assert view.stable_end([first]) == 0                           # no snapshot: nothing known to be decided
    third = _upload(tmp_path, store, 10, 11, _data(9, 10, b"o0", b"o1"), snapshot=[_snapshot(9, 10)])
    assert view.stable_end([first, second, third]) == 10           # producer 9's transaction is open there
