"""RemoteSegmentStore over both backends: copy + verify + manifest, ranged reads, idempotent delete."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tiered_helpers import TP, batches, metadata, write_segment

from tierlog.tiered import (
    CorruptRemoteDataError,
    FsObjectStore,
    IndexType,
    RemoteLogSegmentState,
    RemoteResourceNotFoundError,
    RemoteSegmentStore,
    UploadVerificationError,
    check_batches,
    list_partitions,
    partition_prefix,
    segment_key,
)


@pytest.fixture(params=["fs", "s3"])
def store(request, tmp_path):
    if request.param == "fs":
        return FsObjectStore(tmp_path / "remote")
    return request.getfixturevalue("s3_store")


class _CorruptingStore:
    """Stores every uploaded file with its last byte flipped (a torn or damaged upload)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def put_file(self, key, path):
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        self.inner.put_bytes(key, bytes(data))


def test_copy_writes_every_object_and_the_manifest_last(store, tmp_path):
    data = batches(100, 4)
    files = write_segment(tmp_path / "local", 100, data)
    meta = metadata(100, 119, epochs=((3, None), (4, 110)), size=len(data))
    manifest = RemoteSegmentStore(store).copy_log_segment(meta, files)
    assert manifest.metadata.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED
    keys = store.list_keys(partition_prefix(TP))
    suffixes = sorted(k.rsplit(".", 1)[1] for k in keys)
    assert suffixes == ["index", "leader_epoch_checkpoint", "log", "manifest", "snapshot", "timeindex"]
    assert segment_key(meta.segment_id, 100, ".log") in keys
    assert manifest.objects[".log"].size == len(data)
    assert store.get_range(segment_key(meta.segment_id, 100, ".log"), 0) == data   # bytes unchanged


def test_ranged_reads_and_index_fetch(store, tmp_path):
    data = batches(0, 6)
    files = write_segment(tmp_path / "local", 0, data)
    meta = metadata(0, 29, size=len(data))
    rss = RemoteSegmentStore(store)
    rss.copy_log_segment(meta, files)
    assert rss.fetch_log_segment(meta, 10, 50) == data[10:50]
    assert rss.fetch_log_segment(meta, len(data) - 7) == data[-7:]
    assert rss.fetch_log_segment(meta, len(data) + 5) == b""
    assert rss.fetch_index(meta, IndexType.OFFSET) == files.offset_index.read_bytes()
    assert rss.fetch_index(meta, IndexType.LEADER_EPOCH) == files.leader_epoch_checkpoint
    assert rss.fetch_index(meta, IndexType.PRODUCER_SNAPSHOT) == b"producer-state"


def test_read_back_batches_pass_their_crc_check_and_a_partial_tail_is_left_out(store, tmp_path):
    data = batches(0, 3)
    two = len(batches(0, 2))
    files = write_segment(tmp_path / "local", 0, data)
    meta = metadata(0, 14, size=len(data))
    rss = RemoteSegmentStore(store)
    rss.copy_log_segment(meta, files)
    checked = check_batches(rss.fetch_log_segment(meta, 0, len(data) - 3))
    assert [h.base_offset for h in checked.headers] == [0, 5]
    assert checked.end == two


def test_delete_is_idempotent_and_removes_everything(store, tmp_path):
    files = write_segment(tmp_path / "local", 0, batches(0, 2))
    meta = metadata(0, 9)
    rss = RemoteSegmentStore(store)
    rss.copy_log_segment(meta, files)
    rss.delete_log_segment(meta)
    rss.delete_log_segment(meta)
    assert store.list_keys("") == []
    with pytest.raises(RemoteResourceNotFoundError):
        rss.fetch_log_segment(meta, 0)


def test_copy_twice_is_idempotent(store, tmp_path):
    files = write_segment(tmp_path / "local", 0, batches(0, 2))
    meta = metadata(0, 9)
    rss = RemoteSegmentStore(store)
    first = rss.copy_log_segment(meta, files)
    assert rss.copy_log_segment(meta, files) == first
    assert len(store.list_keys("")) == 6


def test_a_corrupted_upload_fails_verification_and_leaves_nothing(store, tmp_path):
    files = write_segment(tmp_path / "local", 0, batches(0, 2))
    meta = metadata(0, 9)
    with pytest.raises(UploadVerificationError, match="crc32c"):
        RemoteSegmentStore(_CorruptingStore(store)).copy_log_segment(meta, files)
    assert store.list_keys("") == []


def test_a_batch_damaged_in_storage_is_caught_when_read_back(store, tmp_path):
    data = batches(0, 3)
    files = write_segment(tmp_path / "local", 0, data)
    meta = metadata(0, 14)
    rss = RemoteSegmentStore(store)
    rss.copy_log_segment(meta, files)
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0x01
    store.put_bytes(segment_key(meta.segment_id, 0, ".log"), bytes(damaged))
    with pytest.raises(CorruptRemoteDataError, match="CRC"):
        check_batches(rss.fetch_log_segment(meta, 0))


def test_segment_without_manifest_lists_as_unfinished(store, tmp_path):
    files = write_segment(tmp_path / "local", 0, batches(0, 2))
    done, torn = metadata(0, 9), metadata(10, 19)
    rss = RemoteSegmentStore(store)
    rss.copy_log_segment(done, files)
    store.put_file(segment_key(torn.segment_id, 10, ".log"), files.log_segment)
    [listing] = list_partitions(store)
    assert listing.topic_id_partition == TP
    assert [s.metadata.segment_id for s in listing.segments] == [done.segment_id]
    assert [(u.start_offset, u.suffixes, u.reason) for u in listing.unfinished] == [(10, (".log",), "no manifest")]


def test_a_local_segment_damaged_on_disk_is_never_uploaded(store, tmp_path):
    from tierlog.tiered.segment_store import CorruptLocalSegmentError
    files = write_segment(tmp_path / "local", 0, batches(0, 3))
    data = bytearray(files.log_segment.read_bytes())
    data[len(data) // 2] ^= 0x01                    # a bit flipped inside the second batch's records
    files.log_segment.write_bytes(bytes(data))
    rss = RemoteSegmentStore(store)
    with pytest.raises(CorruptLocalSegmentError, match="CRC"):
        rss.copy_log_segment(metadata(0, 14), files)
    assert store.list_keys(partition_prefix(TP)) == []     # nothing written


def test_a_transaction_index_goes_with_its_segment_and_a_missing_one_reads_empty(store, tmp_path):
    files = write_segment(tmp_path / "local", 0, batches(0, 2))
    txn_index = tmp_path / "local" / "00000000000000000000.txnindex"
    txn_index.write_bytes(bytes(34))                       # one 34-byte AbortedTxn entry (opaque to the store)
    with_index, without = metadata(0, 9), metadata(0, 9)
    rss = RemoteSegmentStore(store)
    manifest = rss.copy_log_segment(with_index, replace(files, transaction_index=txn_index))
    assert manifest.objects[IndexType.TRANSACTION.value].size == 34
    assert rss.fetch_transaction_index(with_index) == bytes(34)
    rss.copy_log_segment(without, files)
    assert rss.fetch_transaction_index(without) == b""      # Kafka: no transaction index = empty
    rss.delete_log_segment(with_index)
    rss.delete_log_segment(without)
    assert store.list_keys("") == []
