"""The object store under remote storage: one small interface, two backends.

Keys are ``/``-separated strings relative to the store's root (a directory for
``fs``, a bucket prefix for ``s3``). Every call is idempotent: ``put_*``
replaces an object with the same bytes, ``delete`` of a missing key succeeds,
``get_range`` of a missing key raises :class:`RemoteResourceNotFoundError`.

Backends: :class:`tierlog.tiered.fs_store.FsObjectStore` (a local directory)
and :class:`tierlog.tiered.s3_store.S3ObjectStore` (boto3).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol

__all__ = [
    "ObjectChecksum",
    "ObjectStore",
    "RemoteResourceNotFoundError",
    "RemoteStorageError",
]


class RemoteStorageError(Exception):
    """An operating error of the remote store (unreachable, refused, corrupt data)."""


class RemoteResourceNotFoundError(RemoteStorageError):
    """The object asked for does not exist."""


class ObjectChecksum(NamedTuple):
    """Size and CRC-32C of an object as the store holds it."""

    size: int
    crc32c: int


class ObjectStore(Protocol):
    """What remote storage needs from a backend."""

    def describe(self) -> str:
        """Where the store lives, for messages (``/dir`` or ``s3://bucket/prefix``)."""

    def check(self) -> None:
        """At a broker's start: raise RemoteStorageError naming what to fix when the store
        cannot be used (no credentials, no bucket, a directory that cannot be written)."""

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``, replacing any object there."""

    def put_file(self, key: str, path: Path) -> None:
        """Store the file at ``path`` under ``key`` (large files in parts)."""

    def get_range(self, key: str, start: int, end: int | None = None) -> bytes:
        """Bytes [start, end) of the object (``end`` None: to its end); fewer at its end."""

    def checksum(self, key: str) -> ObjectChecksum:
        """Size and CRC-32C of what the store holds under ``key``."""

    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""

    def list_keys(self, prefix: str) -> list[str]:
        """Every key starting with ``prefix``, sorted."""
