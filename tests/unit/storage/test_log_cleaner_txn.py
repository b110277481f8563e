"""The log cleaner and transactions over real segment files (Kafka's LogCleaner with
CleanedTransactionMetadata): aborted data goes at the first clean, its ABORT marker and index
entry stay for that clean, the marker gets a delete horizon at the next one and goes once
delete.retention.ms has passed; committed transactional data and its marker stay; and nothing at
or above the last stable offset is cleaned, so an open transaction's keys never displace older
committed values."""
from storage_helpers import NOW, config, read_all

from tierlog.records import Record, build_batch, decode_batches
from tierlog.records.control import ABORT, build_marker, control_marker
from tierlog.storage import Log
from tierlog.storage.cleaner_threads import CleanerConfig, LogDirCleaner
from tierlog.storage.txn_index import AbortedTxn

RETENTION = 60_000


def _log(tmp_path) -> Log:
    return Log.open(tmp_path / "c-0", config(cleanup_policy="compact", min_cleanable_dirty_ratio="0.01",
                                              delete_retention_ms=RETENTION), NOW)


def _put(log: Log, key: bytes, value: bytes) -> int:
    return log.append(bytearray(build_batch([Record(0, NOW, key, value)])), 0, NOW).base_offset


def _txn(log: Log, pid: int, values: dict[bytes, bytes], seq: int = 0) -> int:
    records = [Record(i, NOW, k, v) for i, (k, v) in enumerate(values.items())]
    batch = build_batch(records, producer_id=pid, producer_epoch=0, base_sequence=seq, transactional=True)
    return log.append(bytearray(batch), 0, NOW).base_offset


def _end(log: Log, pid: int, commit: bool) -> int:
    return log.append_marker(bytearray(build_marker(pid, 0, commit, 1, NOW)), 0, NOW).base_offset


def _fill(log: Log, start: int, count: int = 60) -> None:
    for i in range(start, start + count):
        _put(log, b"f%d" % (i % 7), b"x" * 100)


def _cleaner(tmp_path, log: Log, limit) -> LogDirCleaner:
    return LogDirCleaner(tmp_path, lambda: {("c", 0): log}, lambda keys: dict.fromkeys(keys, limit()),
                         CleanerConfig(backoff_ms=10),
                         lambda: NOW, 1 << 20)


def _data(log: Log) -> dict[bytes, bytes]:
    return {r.key: r.value for h, records in decode_batches(read_all(log)) if not h.is_control for r in records}


def _markers(log: Log) -> list[tuple[int, int, bool]]:
    """(offset, control type, has a delete horizon) of each marker in the log."""
    return [(h.base_offset, control_marker(records), h.has_delete_horizon)
            for h, records in decode_batches(read_all(log)) if h.is_control]


def test_aborted_data_goes_then_its_marker_after_delete_retention(tmp_path):
    log = _log(tmp_path)
    _put(log, b"k0", b"v1")
    first = _txn(log, 5, {b"k0": b"aborted", b"k1": b"aborted"})
    abort = _end(log, 5, commit=False)
    _txn(log, 6, {b"k2": b"committed"})
    commit = _end(log, 6, commit=True)
    _txn(log, 5, {b"k3": b"committed"}, seq=2)     # the aborted batch is not its producer's last (that one
    commit5 = _end(log, 5, commit=True)            # is kept empty while the producer lives, as in Kafka)
    _fill(log, 0)
    cleaner = _cleaner(tmp_path, log, lambda: log.log_end_offset)
    assert cleaner.clean_once(NOW)
    data = _data(log)
    assert data == {**data, b"k0": b"v1", b"k2": b"committed", b"k3": b"committed"} and b"k1" not in data
    assert _markers(log) == [(abort, ABORT, False), (commit, 1, False), (commit5, 1, False)]  # data was there
    assert log.aborted_transactions(0, log.log_end_offset) == [AbortedTxn(5, first, abort, abort + 1)]
    _fill(log, 60)
    assert cleaner.clean_once(NOW + 1)
    assert _markers(log) == [(abort, ABORT, True), (commit, 1, False), (commit5, 1, False)]   # a horizon first
    assert log.aborted_transactions(0, log.log_end_offset) == []              # no data left to skip
    _fill(log, 120)
    assert cleaner.clean_once(NOW + 1 + RETENTION)
    assert _markers(log) == [(commit, 1, False), (commit5, 1, False)]        # committed data is still there
    assert _data(log)[b"k0"] == b"v1"
    log.close()
    reopened = _log(tmp_path)
    assert reopened.aborted_transactions(0, reopened.log_end_offset) == []
    reopened.close()


def test_nothing_at_or_above_the_last_stable_offset_is_cleaned(tmp_path):
    log = _log(tmp_path)
    _put(log, b"k0", b"v1")
    _txn(log, 7, {b"k0": b"open"})
    _fill(log, 0)
    def lso():
        return log.first_unstable_offset(log.log_end_offset)
    cleaner = _cleaner(tmp_path, log, lso)
    cleaner.clean_once(NOW)
    assert _data(log)[b"k0"] == b"open" and b"v1" in [r.value for _h, rs in decode_batches(read_all(log))
                                                      for r in rs]
    _end(log, 7, commit=False)
    _fill(log, 60)
    cleaner = _cleaner(tmp_path, log, lambda: log.log_end_offset)
    assert cleaner.clean_once(NOW)
    assert _data(log)[b"k0"] == b"v1"                                   # the committed value survived the abort
    log.close()
