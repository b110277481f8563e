"""Snapshots as files: ``<partition dir>/<20-digit end offset>-<10-digit epoch>.checkpoint``.

Written to ``.checkpoint.part``, fsynced, renamed (atomic publish), directory fsynced.
Deletion renames to ``.checkpoint.deleted`` first. Opening the store removes any
``.part`` (an interrupted write or download) and ``.deleted`` leftovers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tierlog.raft.snapshots import RawSnapshotWriter, SnapshotStore
from tierlog.raft.types import OffsetAndEpoch
from tierlog.storage.files import fsync_dir

__all__ = ["FileSnapshotStore", "snapshot_file_name"]

SUFFIX = ".checkpoint"
PART = ".checkpoint.part"
DELETED = ".checkpoint.deleted"
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def snapshot_file_name(snapshot_id: OffsetAndEpoch) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SUFFIX}"


class _FileWriter(RawSnapshotWriter):
    def __init__(self, store: FileSnapshotStore, snapshot_id: OffsetAndEpoch):
        self._id = snapshot_id
        self._final = store.directory / snapshot_file_name(snapshot_id)
        self._part = self._final.with_name(self._final.name[: -len(SUFFIX)] + PART)
        self._file = open(self._part, "wb")  # noqa: SIM115 - closed by freeze/close
        self._size = 0
        self._done = False

    @property
    def snapshot_id(self) -> OffsetAndEpoch:
        return self._id

    @property
    def size(self) -> int:
        return self._size

    def append(self, data: bytes) -> None:
        assert not self._done
        self._file.write(data)
        self._size += len(data)

    def freeze(self) -> None:
        assert not self._done
        self._done = True
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self._part, self._final)
        fsync_dir(self._final.parent)

    def close(self) -> None:
        if self._done:
            return
        self._done = True
        self._file.close()
        try:
            self._part.unlink()
        except FileNotFoundError:
            pass


class FileSnapshotStore(SnapshotStore):
    def __init__(self, directory: Path | str):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in self.directory.iterdir():
            if path.name.endswith(PART) or path.name.endswith(DELETED):
                path.unlink()

    def _path(self, snapshot_id: OffsetAndEpoch) -> Path:
        return self.directory / snapshot_file_name(snapshot_id)

    def list(self) -> list[OffsetAndEpoch]:
        ids = []
        for path in self.directory.iterdir():
            m = _NAME.match(path.name)
            if m:
                ids.append(OffsetAndEpoch(int(m.group(1)), int(m.group(2))))
        return sorted(ids)

    def create(self, snapshot_id: OffsetAndEpoch) -> RawSnapshotWriter:
        return _FileWriter(self, snapshot_id)

    def size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        try:
            return self._path(snapshot_id).stat().st_size
        except FileNotFoundError:
            return None

    def read(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes | None:
        try:
            with open(self._path(snapshot_id), "rb") as f:
                return os.pread(f.fileno(), max_bytes, position)
        except FileNotFoundError:
            return None

    def delete(self, snapshot_id: OffsetAndEpoch) -> None:
        path = self._path(snapshot_id)
        gone = path.with_name(path.name[: -len(SUFFIX)] + DELETED)
        try:
            os.replace(path, gone)
        except FileNotFoundError:
            return
        gone.unlink()
