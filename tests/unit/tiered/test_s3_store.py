"""S3ObjectStore against a moto server: multipart, ranges, prefix, idempotent delete."""

from __future__ import annotations

import os
import socket
import uuid

import boto3
import pytest
from conftest import REGION
from tiered_helpers import batches, metadata, write_segment

from tierlog.tiered import (
    RemoteResourceNotFoundError,
    RemoteSegmentStore,
    RemoteStorageConfigError,
    RemoteStorageError,
    S3ObjectStore,
    S3Settings,
    check_batches,
    object_store_from_config,
    object_store_from_location,
    segment_key,
)
from tierlog.tiered.s3_store import PART_BYTES_MIN


def _raw_client(settings: S3Settings):
    return boto3.client("s3", endpoint_url=settings.endpoint_url, region_name=REGION)


def test_a_file_larger_than_a_part_goes_up_in_parts_and_reads_back_in_ranges(s3_settings, tmp_path):
    store = S3ObjectStore(s3_settings.__class__(**{**_fields(s3_settings), "part_bytes": PART_BYTES_MIN}))
    data = os.urandom(2 * PART_BYTES_MIN + 12345)
    path = tmp_path / "big.log"
    path.write_bytes(data)
    store.put_file("p/big.log", path)
    head = _raw_client(s3_settings).head_object(Bucket=s3_settings.bucket, Key="cluster-a/p/big.log")
    assert head["ContentLength"] == len(data)
    assert head["ETag"].strip('"').endswith("-3")            # a multipart object of three parts
    assert store.get_range("p/big.log", PART_BYTES_MIN - 10, PART_BYTES_MIN + 10) == \
        data[PART_BYTES_MIN - 10:PART_BYTES_MIN + 10]
    assert store.checksum("p/big.log").size == len(data)


def test_a_small_file_is_one_put_and_keys_live_under_the_prefix(s3_store, s3_settings, tmp_path):
    path = tmp_path / "small"
    path.write_bytes(b"hello")
    s3_store.put_file("a/b", path)
    listed = _raw_client(s3_settings).list_objects_v2(Bucket=s3_settings.bucket)["Contents"]
    assert [o["Key"] for o in listed] == ["cluster-a/a/b"]
    assert s3_store.list_keys("a/") == ["a/b"]
    assert s3_store.get_range("a/b", 1, 3) == b"el"


def test_delete_of_a_missing_key_succeeds_and_get_of_it_is_not_found(s3_store):
    s3_store.put_bytes("x", b"1")
    s3_store.delete("x")
    s3_store.delete("x")
    with pytest.raises(RemoteResourceNotFoundError):
        s3_store.get_range("x", 0)


def test_the_factory_builds_an_s3_store_from_rsm_config(s3_settings):
    store = object_store_from_config({
        "rsm.config.storage.backend": "s3",
        "rsm.config.storage.s3.bucket.name": s3_settings.bucket,
        "rsm.config.storage.s3.prefix": "other",
        "rsm.config.storage.s3.endpoint.url": s3_settings.endpoint_url,
        "rsm.config.storage.s3.region": REGION,
        "rsm.config.storage.s3.path.style.access.enabled": "true",
    })
    store.put_bytes("k", b"v")
    assert store.describe() == f"s3://{s3_settings.bucket}/other/"
    assert _raw_client(s3_settings).get_object(Bucket=s3_settings.bucket, Key="other/k")["Body"].read() == b"v"


@pytest.mark.parametrize(("settings", "message"), [
    ({"rsm.config.storage.backend": "s3"}, "bucket"),
    ({"rsm.config.storage.backend": "gcs"}, "fs or s3"),
    ({"rsm.config.storage.backend": "fs"}, "root is required"),
    ({"rsm.config.storage.rot": "/x"}, "unknown"),
    ({"rsm.config.storage.backend": "s3", "rsm.config.storage.s3.bucket.name": "b",
      "rsm.config.storage.s3.path.style.access.enabled": "yes"}, "true or false"),
    ({"rsm.config.storage.backend": "s3", "rsm.config.storage.s3.bucket.name": "b",
      "rsm.config.storage.s3.multipart.part.size.bytes": "1024"}, "part size"),
])
def test_bad_settings_are_config_errors(settings, message):
    with pytest.raises(RemoteStorageConfigError, match=message):
        object_store_from_config(settings)


def test_location_strings(tmp_path):
    assert object_store_from_location(str(tmp_path)).describe() == str(tmp_path)
    s3 = object_store_from_location("s3://bkt/some/prefix", {"rsm.config.storage.s3.region": REGION})
    assert s3.describe() == "s3://bkt/some/prefix/"


def _fields(settings: S3Settings) -> dict:
    return {name: getattr(settings, name) for name in settings.__slots__}


def test_a_segment_larger_than_a_part_round_trips_through_the_segment_store(s3_settings, tmp_path):
    settings = S3Settings(**{**_fields(s3_settings), "part_bytes": PART_BYTES_MIN})
    data = batches(0, 120, per_batch=20, value_size=2500)          # about 6 MiB of batches
    assert len(data) > PART_BYTES_MIN
    files = write_segment(tmp_path / "local", 0, data)
    meta = metadata(0, 2399, size=len(data))
    rss = RemoteSegmentStore(S3ObjectStore(settings))
    manifest = rss.copy_log_segment(meta, files)
    assert manifest.objects[".log"].size == len(data)
    key = "cluster-a/" + segment_key(meta.segment_id, 0, ".log")
    head = _raw_client(s3_settings).head_object(Bucket=s3_settings.bucket, Key=key)
    assert head["ETag"].strip('"').endswith("-2")
    middle = rss.fetch_log_segment(meta, PART_BYTES_MIN - 1000, PART_BYTES_MIN + 1000)
    assert middle == data[PART_BYTES_MIN - 1000:PART_BYTES_MIN + 1000]
    checked = check_batches(rss.fetch_log_segment(meta, 0, 100_000))
    assert checked.headers[0].base_offset == 0 and checked.end <= 100_000


def test_an_unreachable_endpoint_is_a_remote_storage_error(s3_env, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]                 # closed again before the store connects
    store = S3ObjectStore(S3Settings(bucket="b", endpoint_url=f"http://127.0.0.1:{port}", region=REGION,
                                     path_style=True))
    with pytest.raises(RemoteStorageError, match="S3 put k failed"):
        store.put_bytes("k", b"v")


# --- the start-up check -------------------------------------------------------------------


def test_check_passes_on_an_existing_bucket(s3_store):
    s3_store.check()


def test_check_refuses_a_missing_bucket(s3_settings):
    missing = S3Settings(**{**_fields(s3_settings), "bucket": f"missing-{uuid.uuid4().hex[:8]}"})
    with pytest.raises(RemoteStorageError, match=r"does not exist: create it, or set "
                                                 r"rsm\.config\.storage\.s3\.create\.bucket=true"):
        S3ObjectStore(missing).check()


def test_check_creates_a_missing_bucket_when_told_to(s3_settings):
    settings = S3Settings(**{**_fields(s3_settings), "bucket": f"made-{uuid.uuid4().hex[:8]}", "create_bucket": True})
    store = S3ObjectStore(settings)
    store.check()
    store.check()                          # already there: fine
    store.put_bytes("k", b"v")
    assert store.get_range("k", 0) == b"v"


def test_check_refuses_when_boto3_finds_no_credentials(s3_settings, monkeypatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(RemoteStorageError, match="no AWS credentials found"):
        S3ObjectStore(s3_settings).check()


def test_check_lets_an_unreachable_endpoint_pass(s3_env, caplog):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = S3ObjectStore(S3Settings(bucket="b", endpoint_url=f"http://127.0.0.1:{port}", region=REGION,
                                     path_style=True))
    store.check()
    assert "not reachable at start-up" in caplog.text
