"""RemoteSegmentStore with encryption at rest, over both backends (a directory and moto's S3)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from tiered_helpers import NOW, TP, batches, metadata, write_segment

from tierlog.records import Record, build_batch
from tierlog.tiered import (
    CorruptRemoteDataError,
    EncryptionSettings,
    FsObjectStore,
    IndexType,
    KeyRing,
    RemoteEncryptionKeyError,
    RemoteSegmentStore,
    S3ObjectStore,
    SegmentManifest,
    list_partitions,
    partition_prefix,
    segment_key,
)
from tierlog.tiered.encryption import HEADER_BYTES
from tierlog.tiered.manifest import ENCRYPTED_MANIFEST_FORMAT

K1, K2 = os.urandom(32), os.urandom(32)
MARKER = b"plaintext-marker-7d1f"


def _settings(active: str | None = "k1", chunk: int = 4096, **keys: bytes) -> EncryptionSettings:
    return EncryptionSettings(KeyRing(keys or {"k1": K1}, active), chunk)


def _segment(tmp_path, base: int = 0, count: int = 40):
    records = [Record(base + i, NOW + i, b"key-%d" % i, MARKER + b"-%05d" % i + b"v" * 200) for i in range(count)]
    data = b"".join(build_batch(records[i:i + 4], base_offset=base + i) for i in range(0, count, 4))
    files = write_segment(tmp_path / f"local-{base}", base, data)
    (files.producer_snapshot).write_bytes(MARKER + b"-producer-state")
    return data, files, metadata(base, base + count - 1, size=len(data))


@pytest.fixture(params=["fs", "s3"])
def store(request, tmp_path):
    if request.param == "fs":
        return FsObjectStore(tmp_path / "remote")
    return request.getfixturevalue("s3_store")


def test_every_object_is_encrypted_and_reads_back(store, tmp_path):
    data, files, meta = _segment(tmp_path)
    rss = RemoteSegmentStore(store, _settings(), tmp_path / "staging")
    manifest = rss.copy_log_segment(meta, files)
    keys = [k for k in store.list_keys(partition_prefix(TP)) if not k.endswith(".manifest")]
    assert len(keys) == 5
    for key in keys:
        stored = store.get_range(key, 0)
        assert MARKER not in stored and b"key-1" not in stored, key
        assert manifest.objects["." + key.rsplit(".", 1)[1]].size == len(stored)
    assert manifest.key_id == "k1" and manifest.metadata.custom_metadata is not None
    assert not list((tmp_path / "staging").iterdir())                  # staged copies removed
    assert rss.fetch_log_segment(manifest.metadata, 0) == data
    assert rss.fetch_log_segment(manifest.metadata, 5000, 9001) == data[5000:9001]
    assert rss.fetch_log_segment(manifest.metadata, len(data) - 3, len(data) + 100) == data[-3:]
    assert rss.fetch_log_segment(manifest.metadata, len(data) + 5) == b""
    assert rss.fetch_index(manifest.metadata, IndexType.OFFSET) == files.offset_index.read_bytes()
    assert rss.fetch_index(manifest.metadata, IndexType.LEADER_EPOCH) == files.leader_epoch_checkpoint
    assert rss.fetch_index(manifest.metadata, IndexType.PRODUCER_SNAPSHOT) == MARKER + b"-producer-state"


def test_the_manifest_names_the_key_and_listing_reads_it_back(tmp_path):
    store = FsObjectStore(tmp_path / "remote")
    _data, files, meta = _segment(tmp_path)
    RemoteSegmentStore(store, _settings()).copy_log_segment(meta, files)
    raw = store.get_range(segment_key(meta.segment_id, 0, ".manifest"), 0)
    assert b'"key_id": "k1"' in raw and b'"format": %d' % ENCRYPTED_MANIFEST_FORMAT in raw
    [listing] = list_partitions(store)
    [manifest] = listing.segments
    assert manifest.key_id == "k1"
    assert SegmentManifest.from_json(manifest.to_json()) == manifest
    plain = RemoteSegmentStore(store)                                   # no key: listing still works
    with pytest.raises(RemoteEncryptionKeyError, match="not configured"):
        plain.fetch_log_segment(manifest.metadata, 0, 10)


def test_a_wrong_key_and_an_altered_chunk_are_errors_never_bytes(tmp_path):
    store = FsObjectStore(tmp_path / "remote")
    data, files, meta = _segment(tmp_path)
    manifest = RemoteSegmentStore(store, _settings()).copy_log_segment(meta, files)
    with pytest.raises(RemoteEncryptionKeyError, match="does not open"):
        RemoteSegmentStore(store, _settings(k1=K2)).fetch_log_segment(manifest.metadata, 0, 10)
    path = tmp_path / "remote" / segment_key(meta.segment_id, 0, ".log")
    stored = bytearray(path.read_bytes())
    stored[HEADER_BYTES + 4096 + 28 + 100] ^= 0x40                        # inside the second chunk
    path.write_bytes(bytes(stored))
    rss = RemoteSegmentStore(store, _settings(active=None))
    assert rss.fetch_log_segment(manifest.metadata, 0, 4096) == data[:4096]   # the first chunk is fine
    with pytest.raises(CorruptRemoteDataError, match="chunk 1 fails authentication"):
        rss.fetch_log_segment(manifest.metadata, 4000, 4200)
    with pytest.raises(CorruptRemoteDataError):
        rss.authenticate(manifest.metadata, ".log")


def test_rotation_old_segments_stay_readable_under_their_key(tmp_path):
    store = FsObjectStore(tmp_path / "remote")
    old_data, old_files, old_meta = _segment(tmp_path, 0)
    new_data, new_files, new_meta = _segment(tmp_path, 40)
    old = RemoteSegmentStore(store, _settings()).copy_log_segment(old_meta, old_files)
    rotated = RemoteSegmentStore(store, _settings("k2", k1=K1, k2=K2))
    new = rotated.copy_log_segment(new_meta, new_files)
    assert (old.key_id, new.key_id) == ("k1", "k2")
    assert rotated.fetch_log_segment(old.metadata, 0) == old_data
    assert rotated.fetch_log_segment(new.metadata, 0) == new_data
    only_new = RemoteSegmentStore(store, _settings("k2", k2=K2))
    with pytest.raises(RemoteEncryptionKeyError, match="'k1'"):
        only_new.fetch_log_segment(old.metadata, 0, 10)


def test_plain_segments_stay_readable_when_encryption_is_turned_on(tmp_path):
    store = FsObjectStore(tmp_path / "remote")
    data, files, meta = _segment(tmp_path)
    plain = RemoteSegmentStore(store).copy_log_segment(meta, files)
    assert plain.key_id is None
    assert RemoteSegmentStore(store, _settings()).fetch_log_segment(plain.metadata, 0) == data
    assert MARKER in store.get_range(segment_key(meta.segment_id, 0, ".log"), 0)


def test_a_big_segment_goes_up_as_one_encrypted_multipart_upload(s3_settings, tmp_path):
    big = batches(0, 1, per_batch=1, value_size=6 * 1024 * 1024)         # above the 5 MiB part size
    files = write_segment(tmp_path / "local", 0, big)
    meta = metadata(0, 0, size=len(big))
    s3_store = S3ObjectStore(replace(s3_settings, part_bytes=5 * 1024 * 1024))
    rss = RemoteSegmentStore(s3_store, _settings(chunk=64 * 1024))
    manifest = rss.copy_log_segment(meta, files)
    assert manifest.objects[".log"].size > len(big)
    assert rss.fetch_log_segment(manifest.metadata, 3_000_000, 3_200_000) == big[3_000_000:3_200_000]
