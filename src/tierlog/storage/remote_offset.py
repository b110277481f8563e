"""HighestOffsetInRemoteStorage: how far a log is known to be in remote storage (KIP-405).

Written by the tiered storage tasks (broker/remote/: the copy pass, a new leader's
resume point, a follower following the remote log metadata) and read by the log's
retention (local segments at or below it may go, ``local.retention.*``), the Fetch
path and the metrics. It crosses from those modules into the log through this one
object and its lock, never as a bare attribute.
"""
from __future__ import annotations

import threading

__all__ = ["HighestOffsetInRemoteStorage"]


class HighestOffsetInRemoteStorage:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = -1                # -1: nothing of the log is in remote storage

    @property
    def value(self) -> int:
        with self._lock:
            return self._value

    def set(self, offset: int) -> None:
        """Where uploads resume (it may go down: a new leader's lineage)."""
        with self._lock:
            self._value = offset

    def update(self, offset: int) -> None:
        """A segment up to ``offset`` finished uploading: only ever up (Kafka's
        ``updateHighestOffsetInRemoteStorage``)."""
        with self._lock:
            self._value = max(self._value, offset)
