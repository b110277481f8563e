"""An executor's read of one remote segment (no Spark, no broker): rows, data loss, corruption."""
import dataclasses
import uuid

import pytest

from tierlog.client import DataLossError
from tierlog.records import Record, build_batch
from tierlog.spark.remote_read import read_segment_range
from tierlog.tiered import (
    CorruptRemoteDataError,
    FsObjectStore,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteSegmentStore,
    TopicIdPartition,
    segment_key,
)
from tierlog.tiered.layout import LOG_SUFFIX

TP = TopicIdPartition(bytes(range(16)), "orders", 3)
NOW = 1_700_000_000_000


def _upload(tmp_path, batches=10, per_batch=5):
    data = b"".join(build_batch([Record(o, NOW + o, b"k%d" % o, b"v%d" % o) for o in range(b, b + per_batch)],
                                base_offset=b) for b in range(0, batches * per_batch, per_batch))
    local = tmp_path / "local"
    local.mkdir()
    (local / "0.log").write_bytes(data)
    (local / "0.index").write_bytes(bytes(8))                  # one entry: offset 0 at position 0
    (local / "0.timeindex").write_bytes(NOW.to_bytes(8, "big") + bytes(4))
    meta = RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId(TP, uuid.uuid4().bytes), start_offset=0, end_offset=batches * per_batch - 1,
        max_timestamp_ms=NOW, broker_id=1, event_timestamp_ms=NOW, segment_leader_epochs=((0, 0),),
        segment_size_in_bytes=len(data))
    store = FsObjectStore(tmp_path / "remote")
    RemoteSegmentStore(store).copy_log_segment(
        meta, LogSegmentData(local / "0.log", local / "0.index", local / "0.timeindex", None, b"0\n1\n0 0\n"))
    return store, meta


def _offsets(batches):
    return [o for b in batches for o in b.column("offset").to_pylist()]


def test_reads_exactly_the_range_with_the_partition_and_values(tmp_path):
    store, meta = _upload(tmp_path)
    got = list(read_segment_range(store, meta, 12, 37, include_headers=False, fail_on_data_loss=True))
    assert _offsets(got) == list(range(12, 37))
    assert {p for b in got for p in b.column("partition").to_pylist()} == {3}
    assert [bytes(v) for b in got for v in b.column("value").to_pylist()] == [b"v%d" % o for o in range(12, 37)]


def test_a_segment_deleted_after_planning_is_failOnDataLoss_s_decision(tmp_path):
    store, meta = _upload(tmp_path)
    (tmp_path / "remote" / segment_key(meta.segment_id, 0, LOG_SUFFIX)).unlink()
    with pytest.raises(DataLossError, match=r"orders-3: remote segment \[0, 49\].*gone.*offsets 0..49"):
        list(read_segment_range(store, meta, 0, 50, include_headers=False, fail_on_data_loss=True))
    assert list(read_segment_range(store, meta, 0, 50, include_headers=False, fail_on_data_loss=False)) == []


def test_a_corrupt_batch_fails_the_read(tmp_path):
    store, meta = _upload(tmp_path)
    path = tmp_path / "remote" / segment_key(meta.segment_id, 0, LOG_SUFFIX)
    data = bytearray(path.read_bytes())
    second = 12 + int.from_bytes(data[8:12], "big")         # the second batch starts here
    data[second + 61 + 3] ^= 0xFF                            # a byte of its first record
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRemoteDataError, match="bad batch"):
        list(read_segment_range(store, meta, 0, 50, include_headers=False, fail_on_data_loss=False))


def test_an_encrypted_segment_reads_the_same_rows_with_the_key_and_none_without(tmp_path):
    import base64
    import os

    from tierlog.spark.options import parse_source_options
    from tierlog.spark.remote_store import StoreSpec, StoreView
    from tierlog.tiered import EncryptionSettings, KeyRing, RemoteEncryptionKeyError

    key = os.urandom(32)
    (tmp_path / "k1.key").write_text(base64.b64encode(key).decode())
    data = b"".join(build_batch([Record(o, NOW + o, b"k%d" % o, b"v%d" % o) for o in range(b, b + 5)],
                                base_offset=b) for b in range(0, 50, 5))
    local = tmp_path / "local"
    local.mkdir()
    (local / "0.log").write_bytes(data)
    (local / "0.index").write_bytes(bytes(8))
    (local / "0.timeindex").write_bytes(NOW.to_bytes(8, "big") + bytes(4))
    meta = RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId(TP, uuid.uuid4().bytes), start_offset=0, end_offset=49, max_timestamp_ms=NOW,
        broker_id=1, event_timestamp_ms=NOW, segment_leader_epochs=((0, 0),), segment_size_in_bytes=len(data))
    store = FsObjectStore(tmp_path / "remote")
    manifest = RemoteSegmentStore(store, EncryptionSettings(KeyRing({"k1": key}, "k1"), 4096)).copy_log_segment(
        meta, LogSegmentData(local / "0.log", local / "0.index", local / "0.timeindex", None, b"0\n1\n0 0\n"))
    opts = parse_source_options({"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "orders",
                                 "remoteStorage": str(tmp_path / "remote"),
                                 "rsm.config.encryption.keys.K1.file": str(tmp_path / "k1.key")}, streaming=False)
    encryption = StoreSpec.of(opts).encryption()          # Spark option keys are case-insensitive
    segment = StoreView.of_topics(store, ["orders"], encryption).readable(("orders", 3), None, None)[0][0]
    assert segment == manifest.metadata
    got = list(read_segment_range(store, segment, 12, 37, include_headers=False, fail_on_data_loss=True,
                                  encryption=encryption))
    assert _offsets(got) == list(range(12, 37))
    with pytest.raises(RemoteEncryptionKeyError, match="not configured"):
        list(read_segment_range(store, segment, 12, 37, include_headers=False, fail_on_data_loss=True))


def test_batches_larger_than_a_chunk_are_read_whole(tmp_path, monkeypatch):
    from tierlog.spark import remote_read
    store, meta = _upload(tmp_path)
    monkeypatch.setattr(remote_read, "READ_CHUNK_BYTES", 40)        # less than one batch
    got = list(read_segment_range(store, meta, 3, 48, include_headers=False, fail_on_data_loss=True))
    assert _offsets(got) == list(range(3, 48))


@pytest.mark.parametrize("ahead", [0, 1, 3])
def test_small_chunks_read_ahead_or_not_give_the_same_rows(tmp_path, monkeypatch, ahead):
    from tierlog.spark import remote_read
    store, meta = _upload(tmp_path)
    monkeypatch.setattr(remote_read, "READ_CHUNK_BYTES", 100)       # batches cut at every chunk's end
    got = list(read_segment_range(store, meta, 3, 48, include_headers=False, fail_on_data_loss=True,
                                  read_ahead_chunks=ahead))
    assert _offsets(got) == list(range(3, 48))


@pytest.mark.parametrize("chunk", [1, 5, 12, 13, 61, 100, 333, 1 << 20])
def test_any_chunk_size_gives_the_same_rows(tmp_path, monkeypatch, chunk):
    """Chunks shorter than a batch's length field, ending anywhere in a header or a record, or
    holding the whole segment: the cut batches are completed from the next chunks."""
    from tierlog.spark import remote_read
    store, meta = _upload(tmp_path)
    monkeypatch.setattr(remote_read, "READ_CHUNK_BYTES", chunk)
    got = list(read_segment_range(store, meta, 0, 50, include_headers=False, fail_on_data_loss=True,
                                  read_ahead_chunks=1))
    assert _offsets(got) == list(range(50))
    assert [bytes(v) for b in got for v in b.column("value").to_pylist()] == [b"v%d" % o for o in range(50)]


@pytest.mark.parametrize("chunk", [7, 100, 1 << 20])
def test_a_batch_claiming_more_than_the_segment_holds_fails_the_read(tmp_path, monkeypatch, chunk):
    from tierlog.spark import remote_read
    store, meta = _upload(tmp_path)
    path = tmp_path / "remote" / segment_key(meta.segment_id, 0, LOG_SUFFIX)
    data = bytearray(path.read_bytes())
    second = 12 + int.from_bytes(data[8:12], "big")
    data[second + 8:second + 12] = (1 << 30).to_bytes(4, "big")     # the second batch's length: 1 GiB
    path.write_bytes(bytes(data))
    monkeypatch.setattr(remote_read, "READ_CHUNK_BYTES", chunk)
    with pytest.raises(CorruptRemoteDataError, match=f"no whole batch at position {second}"):
        list(read_segment_range(store, meta, 0, 50, include_headers=False, fail_on_data_loss=True))


def test_a_truncated_segment_fails_the_read_with_read_ahead(tmp_path, monkeypatch):
    from tierlog.spark import remote_read
    store, meta = _upload(tmp_path)
    path = tmp_path / "remote" / segment_key(meta.segment_id, 0, LOG_SUFFIX)
    path.write_bytes(path.read_bytes()[:-5])                       # the last batch cut short
    monkeypatch.setattr(remote_read, "READ_CHUNK_BYTES", 64)
    short = dataclasses.replace(meta, segment_size_in_bytes=meta.segment_size_in_bytes - 5)
    with pytest.raises(CorruptRemoteDataError, match="no whole batch"):
        list(read_segment_range(store, short, 0, 50, include_headers=False, fail_on_data_loss=True,
                                read_ahead_chunks=2))


def test_a_worker_s_tasks_share_one_store_per_spec(tmp_path):
    from tierlog.spark.remote_store import StoreSpec, shared_store

    one, other = StoreSpec(str(tmp_path / "a"), ()), StoreSpec(str(tmp_path / "b"), ())
    assert shared_store(StoreSpec(str(tmp_path / "a"), ())) is shared_store(one)
    assert shared_store(other) is not shared_store(one)
    assert shared_store(other).root == tmp_path / "b"
