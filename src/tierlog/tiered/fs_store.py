"""The ``fs`` backend: objects are files under a root directory.

A put writes ``<key>.<random>.tmp`` and renames it over the key, so a reader
never sees half an object and a crashed put leaves only a temporary file
(ignored by ``list_keys``). Directories are created on demand and removed when
a delete empties them.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from crc32c import crc32c

from tierlog.tiered.object_store import (
    ObjectChecksum,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)

__all__ = ["FsObjectStore"]

_TMP_SUFFIX = ".tmp"
_COPY_CHUNK_BYTES = 1024 * 1024


class FsObjectStore:
    """Objects as files below ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def describe(self) -> str:
        return str(self.root)

    def check(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RemoteStorageError(f"cannot create remote storage directory {self.root}: {exc.strerror}") from None
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise RemoteStorageError(f"remote storage directory {self.root} is not writable")

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        assert key and all(p not in ("", ".", "..") for p in parts), f"bad object key {key!r}"
        return self.root.joinpath(*parts)

    def _tmp_for(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.with_name(f"{path.name}.{uuid.uuid4().hex}{_TMP_SUFFIX}")

    def put_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        try:
            tmp = self._tmp_for(path)
            with open(tmp, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            raise RemoteStorageError(f"cannot write {path}: {exc}") from exc

    def put_file(self, key: str, path: Path) -> None:
        target = self._path(key)
        try:
            tmp = self._tmp_for(target)
            with open(path, "rb") as src, open(tmp, "wb") as out:
                shutil.copyfileobj(src, out, _COPY_CHUNK_BYTES)
            os.replace(tmp, target)
        except OSError as exc:
            raise RemoteStorageError(f"cannot copy {path} to {target}: {exc}") from exc

    def get_range(self, key: str, start: int, end: int | None = None) -> bytes:
        assert start >= 0 and (end is None or end >= start), (start, end)
        path = self._path(key)
        try:
            with open(path, "rb") as src:
                src.seek(start)
                return src.read(-1 if end is None else end - start)
        except FileNotFoundError:
            raise RemoteResourceNotFoundError(f"no object {key} in {self.root}") from None
        except OSError as exc:
            raise RemoteStorageError(f"cannot read {path}: {exc}") from exc

    def checksum(self, key: str) -> ObjectChecksum:
        path = self._path(key)
        crc, size = 0, 0
        try:
            with open(path, "rb") as src:
                while chunk := src.read(_COPY_CHUNK_BYTES):
                    crc = crc32c(chunk, crc)
                    size += len(chunk)
        except FileNotFoundError:
            raise RemoteResourceNotFoundError(f"no object {key} in {self.root}") from None
        except OSError as exc:
            raise RemoteStorageError(f"cannot read {path}: {exc}") from exc
        return ObjectChecksum(size, crc)

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
            self._remove_empty_dirs(path.parent)
        except OSError as exc:
            raise RemoteStorageError(f"cannot delete {path}: {exc}") from exc

    def _remove_empty_dirs(self, directory: Path) -> None:
        while directory != self.root and directory.is_relative_to(self.root):
            try:
                directory.rmdir()
            except OSError:      # not empty (or already gone): stop
                return
            directory = directory.parent

    def list_keys(self, prefix: str) -> list[str]:
        """Walks only the directories that can hold keys with ``prefix``."""
        if not self.root.is_dir():
            return []
        keys: list[str] = []
        for dirpath, dirs, files in os.walk(self.root):
            rel = Path(dirpath).relative_to(self.root).as_posix()
            base = "" if rel == "." else rel + "/"
            dirs[:] = [d for d in dirs if _may_hold(base + d + "/", prefix)]
            keys.extend(base + f for f in files if not f.endswith(_TMP_SUFFIX))
        return sorted(k for k in keys if k.startswith(prefix))


def _may_hold(directory: str, prefix: str) -> bool:
    """Can keys under ``directory`` (ending in ``/``) start with ``prefix``?"""
    return directory.startswith(prefix) or prefix.startswith(directory)
