"""One process per data directory: Kafka's ``.lock`` file in each log dir and the metadata dir.

``DirLock.acquire(dir)`` takes an exclusive ``fcntl.flock`` on ``<dir>/.lock``
without waiting and writes the holder's pid into it; a directory locked by
another process (or by another ``DirLock`` of this one) raises
``DirInUseError``, whose one-line message names the directory and the holder's
pid.  The lock goes with the process (the kernel drops it on exit, kill -9
included), so a stale ``.lock`` file never blocks a restart.  ``check_free``
only looks (takes and drops the lock), for a launcher that must not touch a
directory in use.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["LOCK_FILE", "DirInUseError", "DirLock", "check_free"]

LOCK_FILE = ".lock"


class DirInUseError(Exception):
    """Another process holds the directory's lock."""


class DirLock:
    def __init__(self, directory: Path, fd: int):
        self.directory = directory
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, directory: Path | str) -> DirLock:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise DirInUseError(f"{directory} is in use by another tierlog node (pid {holder or 'unknown'}): "
                                f"its {LOCK_FILE} is held") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(directory, fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)          # closing the descriptor drops the flock
            self._fd = None


def check_free(directory: Path | str) -> None:
    """DirInUseError if a process holds ``directory``'s lock; a directory without one is free."""
    if (Path(directory) / LOCK_FILE).exists():
        DirLock.acquire(directory).release()


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None
