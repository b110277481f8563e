"""Build the object store from ``rsm.config.*`` settings (or a CLI location).

Keys (values are strings, as in server.properties):

    rsm.config.storage.backend                          fs (default) | s3
    rsm.config.storage.root                             fs: the directory (required)
    rsm.config.storage.s3.bucket.name                   s3: the bucket (required)
    rsm.config.storage.s3.prefix                        s3: key prefix (default none)
    rsm.config.storage.s3.endpoint.url                  s3: endpoint (default AWS's)
    rsm.config.storage.s3.region                        s3: region (default boto3's)
    rsm.config.storage.s3.path.style.access.enabled     s3: true | false (default false)
    rsm.config.storage.s3.multipart.part.size.bytes     s3: part size, 5 MiB..5 GiB (default 8 MiB)
    rsm.config.storage.s3.create.bucket                 s3: true: a broker creates a missing bucket at
                                                        its start; false (default): refuses to start

Credentials come from boto3's chain. Unknown ``rsm.config.storage.*`` keys are
errors (a typo would otherwise silently select a default).
"""

from __future__ import annotations

from pathlib import Path

from tierlog.extras import MissingExtraError
from tierlog.tiered.fs_store import FsObjectStore
from tierlog.tiered.object_store import ObjectStore
from tierlog.tiered.s3_check import CREATE_BUCKET_KEY
from tierlog.tiered.s3_store import PART_BYTES_DEFAULT, S3ObjectStore, S3Settings

__all__ = [
    "BACKEND",
    "FS_ROOT",
    "S3_BUCKET",
    "S3_CREATE_BUCKET",
    "S3_ENDPOINT_URL",
    "S3_PART_BYTES",
    "S3_PATH_STYLE",
    "S3_PREFIX",
    "S3_REGION",
    "STORAGE_KEYS",
    "RemoteStorageConfigError",
    "location_settings",
    "object_store_from_config",
    "object_store_from_location",
]

_P = "rsm.config.storage."
BACKEND = _P + "backend"
FS_ROOT = _P + "root"
S3_BUCKET = _P + "s3.bucket.name"
S3_PREFIX = _P + "s3.prefix"
S3_ENDPOINT_URL = _P + "s3.endpoint.url"
S3_REGION = _P + "s3.region"
S3_PATH_STYLE = _P + "s3.path.style.access.enabled"
S3_PART_BYTES = _P + "s3.multipart.part.size.bytes"
S3_CREATE_BUCKET = CREATE_BUCKET_KEY
_KNOWN = frozenset({BACKEND, FS_ROOT, S3_BUCKET, S3_PREFIX, S3_ENDPOINT_URL, S3_REGION,
                    S3_PATH_STYLE, S3_PART_BYTES, S3_CREATE_BUCKET})
STORAGE_KEYS = _KNOWN       # where the store is, never a secret (credentials come from boto3's chain)
_BOOLS = {"true": True, "false": False}


class RemoteStorageConfigError(ValueError):
    """A missing, unknown or malformed ``rsm.config.storage.*`` setting."""


def object_store_from_config(settings: dict[str, str]) -> ObjectStore:
    """The store the ``rsm.config.storage.*`` entries of ``settings`` describe."""
    unknown = sorted(k for k in settings if k.startswith(_P) and k not in _KNOWN)
    if unknown:
        raise RemoteStorageConfigError(f"unknown remote storage setting(s): {', '.join(unknown)}")
    backend = str(settings.get(BACKEND, "fs")).strip().lower()
    if backend == "fs":
        root = settings.get(FS_ROOT)
        if not root:
            raise RemoteStorageConfigError(f"{FS_ROOT} is required for the fs backend")
        return FsObjectStore(Path(root))
    if backend == "s3":
        try:
            return S3ObjectStore(_s3_settings(settings))
        except MissingExtraError as exc:
            raise RemoteStorageConfigError(str(exc)) from None
    raise RemoteStorageConfigError(f"{BACKEND} must be fs or s3, got {backend!r}")


def _s3_settings(settings: dict[str, str]) -> S3Settings:
    part_bytes = _integer(settings, S3_PART_BYTES, PART_BYTES_DEFAULT)
    try:
        return S3Settings(
            bucket=str(settings.get(S3_BUCKET) or ""), prefix=str(settings.get(S3_PREFIX) or ""),
            endpoint_url=settings.get(S3_ENDPOINT_URL) or None, region=settings.get(S3_REGION) or None,
            path_style=_boolean(settings, S3_PATH_STYLE), part_bytes=part_bytes,
            create_bucket=_boolean(settings, S3_CREATE_BUCKET))
    except ValueError as exc:
        raise RemoteStorageConfigError(f"bad S3 remote storage settings: {exc}") from None


def _integer(settings: dict[str, str], key: str, default: int) -> int:
    text = str(settings.get(key, default)).strip()
    try:
        return int(text)
    except ValueError:
        raise RemoteStorageConfigError(f"{key} must be an integer, got {text!r}") from None


def _boolean(settings: dict[str, str], key: str) -> bool:
    text = str(settings.get(key, "false")).strip().lower()
    if text not in _BOOLS:
        raise RemoteStorageConfigError(f"{key} must be true or false, got {text!r}")
    return _BOOLS[text]


def location_settings(location: str) -> dict[str, str]:
    """The ``rsm.config.storage.*`` entries ``DIR`` or ``s3://BUCKET/PREFIX`` stands for."""
    if location.startswith("s3://"):
        bucket, _, prefix = location[len("s3://"):].partition("/")
        if not bucket:
            raise RemoteStorageConfigError(f"no bucket in {location!r}: want s3://BUCKET/PREFIX")
        return {BACKEND: "s3", S3_BUCKET: bucket, S3_PREFIX: prefix}
    return {BACKEND: "fs", FS_ROOT: location}


def object_store_from_location(location: str, settings: dict[str, str] | None = None) -> ObjectStore:
    """``DIR`` or ``s3://BUCKET/PREFIX`` (other S3 settings from ``settings``)."""
    return object_store_from_config({**(settings or {}), **location_settings(location)})
