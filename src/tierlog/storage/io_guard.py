"""The guard around a log's file work: ``with guard:`` refuses once the log is offline and takes it
offline on the first OSError, raised again as KafkaStorageError (Kafka's LogDirFailureChannel).

A plain object rather than a generator context manager: every read, append and offset lookup of
every partition enters it, so its cost is paid per request per partition.
"""
from __future__ import annotations

from pathlib import Path
from types import TracebackType

from tierlog.storage.dir_failure import LogDirFailureChannel
from tierlog.storage.errors import KafkaStorageError

__all__ = ["IoGuard"]


class IoGuard:
    __slots__ = ("directory", "failures", "offline")

    def __init__(self, directory: Path, failures: LogDirFailureChannel | None):
        self.directory = directory
        self.failures = failures
        self.offline = False

    def __enter__(self) -> None:
        if self.offline:
            raise KafkaStorageError(f"log {self.directory} is offline or closed")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None or not issubclass(kind, OSError):
            return
        self.offline = True
        if self.failures is not None:
            self.failures.report(self.directory.parent, f"{self.directory.name}: {exc}")
        raise KafkaStorageError(f"I/O error in {self.directory}: {exc}") from exc
