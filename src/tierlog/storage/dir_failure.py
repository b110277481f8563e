"""Where a log directory's I/O errors are reported (Kafka's LogDirFailureChannel).

Any thread that hits an I/O error in a log directory (an append on the event
loop, a flush or checkpoint on the directory's writer thread) calls ``report``;
the owner of the directories (``LogManager``) drains ``take`` on its own thread
and takes each reported directory offline once. The first report of a directory
is logged at ERROR with the cause (``ENOSPC``, ``EIO``...); later reports of the
same directory are not logged again.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

__all__ = ["LogDirFailureChannel"]

_log = logging.getLogger(__name__)


class LogDirFailureChannel:
    """Thread-safe: reported directories, each handed out by ``take`` once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reported: set[Path] = set()       # every directory ever reported
        self._pending: list[Path] = []          # reported, not yet taken

    def report(self, log_dir: Path, cause: str) -> None:
        with self._lock:
            if log_dir in self._reported:
                return
            self._reported.add(log_dir)
            self._pending.append(log_dir)
        _log.error("log directory %s failed: %s", log_dir, cause)

    def take(self) -> list[Path]:
        """The directories reported since the last call."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def has_failed(self, log_dir: Path) -> bool:
        with self._lock:
            return log_dir in self._reported
