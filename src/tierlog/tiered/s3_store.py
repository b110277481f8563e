"""The ``s3`` backend: objects in an S3 bucket under a key prefix, through boto3.

- Credentials come from boto3's usual chain (environment, shared files, instance
  role); the endpoint URL, region and path-style addressing are settings.
- Files larger than ``part_bytes`` are uploaded in parts (multipart upload);
  a failed multipart upload is aborted so no parts linger. Smaller ones are
  one PUT.
- Reads are ranged GETs (``Range: bytes=start-end``); ``checksum`` streams the
  object back in ``part_bytes`` chunks.
- Deleting a missing key succeeds (S3's DeleteObject is idempotent).
- boto3 comes with the ``s3`` extra; without it, building a store raises
  MissingExtraError naming the extra.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from crc32c import crc32c

from tierlog.extras import require
from tierlog.tiered.object_store import (
    ObjectChecksum,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)
from tierlog.tiered.s3_check import check_bucket

if TYPE_CHECKING:   # botocore ships no type stubs: the name is Any to mypy, named for the reader
    from botocore.client import BaseClient

__all__ = [
    "PART_BYTES_DEFAULT",
    "PART_BYTES_MAX",
    "PART_BYTES_MIN",
    "S3ObjectStore",
    "S3Settings",
]

_log = logging.getLogger(__name__)

PART_BYTES_MIN = 5 * 1024 * 1024           # S3's smallest part (all but the last)
PART_BYTES_MAX = 5 * 1024 * 1024 * 1024    # S3's largest part
PART_BYTES_DEFAULT = 8 * 1024 * 1024
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_LIST_PAGE_KEYS = 1000
# the start-up check gives up on a silent endpoint within seconds, not boto3's minutes
_PROBE_CONFIG = {"connect_timeout": 5, "read_timeout": 10, "retries": {"mode": "standard", "total_max_attempts": 2}}


@dataclass(frozen=True, slots=True)
class S3Settings:
    bucket: str
    prefix: str = ""
    endpoint_url: str | None = None
    region: str | None = None
    path_style: bool = False
    part_bytes: int = PART_BYTES_DEFAULT
    create_bucket: bool = False      # check(): create a missing bucket instead of refusing it

    def __post_init__(self) -> None:
        if not self.bucket:
            raise ValueError("an S3 bucket name is required")
        if not PART_BYTES_MIN <= self.part_bytes <= PART_BYTES_MAX:
            raise ValueError(f"S3 part size must be in [{PART_BYTES_MIN}, {PART_BYTES_MAX}] bytes, "
                             f"got {self.part_bytes}")


def _client(settings: S3Settings, **config: object) -> BaseClient:
    require("s3", "S3 remote storage")
    import boto3
    from botocore.config import Config

    addressing = "path" if settings.path_style else "auto"
    config.setdefault("retries", {"mode": "standard"})
    return boto3.session.Session().client(
        "s3", endpoint_url=settings.endpoint_url, region_name=settings.region,
        config=Config(s3={"addressing_style": addressing}, **config))


class S3ObjectStore:
    """Objects under ``s3://bucket/prefix``."""

    def __init__(self, settings: S3Settings, client: BaseClient | None = None) -> None:
        self.settings = settings
        self._prefix = settings.prefix.strip("/") + "/" if settings.prefix.strip("/") else ""
        self._injected = client is not None
        self._s3 = client if client is not None else _client(settings)

    def describe(self) -> str:
        return f"s3://{self.settings.bucket}/{self._prefix}"

    def check(self) -> None:
        """At a node's start: credentials found and the bucket there (created when
        ``create_bucket``), else RemoteStorageError naming what to fix. An endpoint that
        does not answer is only logged (uploads retry, reads get errors)."""
        probe = self._s3 if self._injected else _client(self.settings, **_PROBE_CONFIG)
        check_bucket(probe, self.settings.bucket, self.settings.create_bucket)

    def _key(self, key: str) -> str:
        assert key and not key.startswith("/"), f"bad object key {key!r}"
        return self._prefix + key

    def put_bytes(self, key: str, data: bytes) -> None:
        with _errors(f"put {key}"):
            self._s3.put_object(Bucket=self.settings.bucket, Key=self._key(key), Body=data)

    def put_file(self, key: str, path: Path) -> None:
        size = Path(path).stat().st_size
        if size <= self.settings.part_bytes:
            self.put_bytes(key, Path(path).read_bytes())
            return
        with _errors(f"multipart upload of {key}"):
            self._multipart(self._key(key), Path(path))

    def _multipart(self, full_key: str, path: Path) -> None:
        bucket = self.settings.bucket
        upload_id = self._s3.create_multipart_upload(Bucket=bucket, Key=full_key)["UploadId"]
        try:
            parts = self._upload_parts(full_key, path, upload_id)
            self._s3.complete_multipart_upload(
                Bucket=bucket, Key=full_key, UploadId=upload_id, MultipartUpload={"Parts": parts})
        except BaseException:
            _abort_quietly(self._s3, bucket, full_key, upload_id)
            raise

    def _upload_parts(self, full_key: str, path: Path, upload_id: str) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        with open(path, "rb") as src:
            number = 1
            while chunk := src.read(self.settings.part_bytes):
                answer = self._s3.upload_part(Bucket=self.settings.bucket, Key=full_key,
                                              UploadId=upload_id, PartNumber=number, Body=chunk)
                parts.append({"PartNumber": number, "ETag": answer["ETag"]})
                number += 1
        return parts

    def get_range(self, key: str, start: int, end: int | None = None) -> bytes:
        assert start >= 0 and (end is None or end >= start), (start, end)
        if end is not None and end == start:
            return b""
        wanted = f"bytes={start}-" if end is None else f"bytes={start}-{end - 1}"
        with _errors(f"get {key}"):
            try:
                answer = self._s3.get_object(Bucket=self.settings.bucket, Key=self._key(key),
                                             Range=wanted)
            except Exception as exc:
                if _code(exc) == "InvalidRange":       # start at or past the end
                    return b""
                raise
            data: bytes = answer["Body"].read()
            return data

    def checksum(self, key: str) -> ObjectChecksum:
        crc, size = 0, 0
        with _errors(f"get {key}"):
            body = self._s3.get_object(Bucket=self.settings.bucket, Key=self._key(key))["Body"]
            while chunk := body.read(self.settings.part_bytes):
                crc = crc32c(chunk, crc)
                size += len(chunk)
        return ObjectChecksum(size, crc)

    def delete(self, key: str) -> None:
        with _errors(f"delete {key}"):
            self._s3.delete_object(Bucket=self.settings.bucket, Key=self._key(key))

    def list_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        token = None
        with _errors(f"list {prefix}"):
            while True:
                kw = {"Bucket": self.settings.bucket, "Prefix": self._prefix + prefix,
                      "MaxKeys": _LIST_PAGE_KEYS}
                if token:
                    kw["ContinuationToken"] = token
                answer = self._s3.list_objects_v2(**kw)
                keys.extend(o["Key"][len(self._prefix):] for o in answer.get("Contents", ()))
                if not answer.get("IsTruncated"):
                    return sorted(keys)
                token = answer["NextContinuationToken"]


def _code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code"))
    return None


def _abort_quietly(s3: BaseClient, bucket: str, key: str, upload_id: str) -> None:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
    except (BotoCoreError, ClientError) as exc:     # the upload failed already; report both
        _log.warning("could not abort multipart upload %s of %s: %s", upload_id, key, exc)


class _errors:
    """Map boto3/botocore failures to RemoteStorageError (not found: RemoteResourceNotFoundError)."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None or isinstance(exc, (RemoteStorageError, AssertionError)) or not isinstance(exc, Exception):
            return                  # raised as it is
        if _code(exc) in _NOT_FOUND_CODES:
            raise RemoteResourceNotFoundError(f"S3 {self.what}: not found") from exc
        raise RemoteStorageError(f"S3 {self.what} failed: {exc}") from exc
