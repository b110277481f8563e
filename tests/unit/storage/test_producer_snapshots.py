"""Kafka's producer snapshot files: the codec, and a log that writes them at roll and close and
loads them at open, so an idempotent producer's state outlives its segments."""
import struct

import pytest
from crc32c import crc32c
from storage_helpers import NOW, batch, config

from tierlog.storage import Log
from tierlog.storage.producer_snapshot_codec import (
    ProducerSnapshotError,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
)


def test_layout_matches_kafkas_version_1():
    entry = SnapshotEntry(7, 2, 41, 1000, 4, 1_700_000_000_000)
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 7, 2, 41, 1000, 4, 1_700_000_000_000, -1, -1)
    assert encode_snapshot([entry]) == struct.pack(">hI", 1, crc32c(body)) + body
    assert decode_snapshot(encode_snapshot([entry])) == [entry]


@pytest.mark.parametrize("mangle", [lambda b: b[:-1], lambda b: b[:2] + b"\0\0\0\0" + b[6:],
                                    lambda b: b"\0\2" + b[2:]])
def test_corrupt_snapshots_are_refused(mangle):
    with pytest.raises(ProducerSnapshotError):
        decode_snapshot(mangle(encode_snapshot([SnapshotEntry(1, 0, 0, 0, 0, 0)])))


def _batch(pid: int, seq: int, n: int = 2) -> bytearray:
    return batch(n, producer_id=pid, producer_epoch=0, base_sequence=seq)


def test_producer_state_outlives_deleted_segments(tmp_path):
    cfg = config(internal_segment_bytes=300, retention_bytes=1)
    log = Log.open(tmp_path / "t-0", cfg, NOW)
    for seq in range(0, 40, 2):
        log.append(_batch(5, seq), 0, NOW)
    last = log.append(_batch(9, 0), 0, NOW)
    for seq in range(40, 80, 2):
        log.append(_batch(5, seq), 0, NOW)
    assert log.segment_count > 4
    assert sorted(p.suffix for p in log.directory.glob("*.snapshot"))
    log.enforce_retention(NOW)
    log.close()
    reopened = Log.open(tmp_path / "t-0", cfg, NOW, clean_shutdown=True)
    assert reopened.local_log_start_offset > last.last_offset          # producer 9's batch is gone locally
    retry = reopened.append(_batch(9, 0), 0, NOW)                      # ...but its retry is still a duplicate
    assert (retry.base_offset, retry.last_offset) == (last.base_offset, last.last_offset)


def test_retries_of_a_producers_last_five_batches_stay_duplicates_after_reopen_and_truncation(tmp_path):
    """A snapshot holds a producer's last batch only: the batches before it come back from the
    segment below the snapshot, so a retry of any of the last five is answered with its offsets
    (it was OUT_OF_ORDER_SEQUENCE_NUMBER, and librdkafka wrote the batch again at a bumped epoch)."""
    cfg = config(internal_segment_bytes=600)
    log = Log.open(tmp_path / "t-0", cfg, NOW)
    first = [log.append(_batch(5, seq), 0, NOW) for seq in range(0, 40, 2)]
    assert log.segment_count > 2
    log.close()
    log = Log.open(tmp_path / "t-0", cfg, NOW, clean_shutdown=True)      # from the snapshot at the log end
    assert [log.append(_batch(5, seq), 0, NOW).base_offset for seq in range(30, 40, 2)] == \
        [r.base_offset for r in first[15:]]
    base = log.rolled_segments()[-1].next_offset                          # a roll's snapshot
    log.truncate_to(base + 2)
    assert log.append(_batch(5, 2 * (base // 2 - 3)), 0, NOW).base_offset == base - 6
    log.close()


def test_rolled_segments_and_their_snapshot_files(tmp_path):
    cfg = config(internal_segment_bytes=300)
    log = Log.open(tmp_path / "t-0", cfg, NOW)
    for seq in range(0, 20, 2):
        log.append(_batch(5, seq), 0, NOW)
    rolled = log.rolled_segments()
    assert len(rolled) == log.segment_count - 1
    for seg in rolled:
        assert seg.log_path.stat().st_size == seg.size and seg.offset_index_path.exists()
        assert log.producer_snapshot_file(seg.next_offset) is not None
    state = decode_snapshot(log.producer_snapshot_file(rolled[-1].next_offset).read_bytes())
    assert state[0].producer_id == 5 and state[0].last_offset == rolled[-1].next_offset - 1


def test_rebuild_from_remote_starts_an_empty_log_at_the_local_start(tmp_path):
    log = Log.open(tmp_path / "t-0", config(remote_storage_enable="true"), NOW)
    log.append(_batch(5, 0), 0, NOW)
    snapshot = encode_snapshot([SnapshotEntry(9, 0, 1, 499, 1, NOW)])
    log.rebuild_from_remote(100, 500, [(0, 0), (3, 200), (4, 500)], snapshot)
    assert (log.log_start_offset, log.local_log_start_offset, log.log_end_offset) == (100, 500, 500)
    assert log.epoch_entries() == [(0, 100), (3, 200)]
    retry = log.append(_batch(9, 0), 4, NOW)
    assert (retry.base_offset, retry.last_offset) == (498, 499)         # known to the rebuilt state
    log.close()
    reopened = Log.open(tmp_path / "t-0", config(remote_storage_enable="true"), NOW, clean_shutdown=True,
                        log_start_offset=100)
    assert (reopened.log_start_offset, reopened.local_log_start_offset) == (100, 500)
