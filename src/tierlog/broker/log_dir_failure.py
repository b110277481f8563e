"""Partitions whose log dir failed (Kafka's ``ReplicaManager.handleLogDirFailure``).

A log that fails an I/O takes its whole dir offline (``LogManager.take_failed_offline``,
asked at once by whoever saw the failure: ``check``).  The replica manager then drops
every hosted partition whose log went offline (``take_offline`` names them: parked
requests fail, fetchers stop), and they stay offline: later images do not host them
again (``is_offline``) until the broker restarts, or until the image unassigns them
(``forget``: a later assignment creates a fresh log elsewhere).  The controller moves
their leadership away (KIP-858: exactly the replicas assigned to the failed dir; it fences
a broker with no online log dir).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .partition import Partition

__all__ = ["LogDirFailures"]

log = logging.getLogger(__name__)

Key = tuple[str, int]
NAMED_MAX = 20          # partitions named in the warning; the rest only counted


class _Logs(Protocol):
    def take_failed_offline(self) -> None: ...


class LogDirFailures:
    def __init__(self, logs: _Logs) -> None:
        self._logs = logs
        self._offline: set[Key] = set()

    def check(self) -> None:
        """A log just failed: take its dir offline now (the node's loop drops its partitions next)."""
        self._logs.take_failed_offline()

    def take_offline(self, partitions: Mapping[Key, Partition]) -> list[Key]:
        """The hosted partitions whose log went offline, now remembered offline, in key order."""
        gone = sorted(key for key, part in partitions.items() if part.offline)
        self._offline.update(gone)
        if gone:
            log.warning("%d partitions offline with their log dir: %s", len(gone),
                        ", ".join(f"{t}-{p}" for t, p in gone[:NAMED_MAX]))
        return gone

    def is_offline(self, key: Key) -> bool:
        return key in self._offline

    def forget(self, key: Key) -> None:
        """The image no longer assigns ``key`` here: a later assignment may host it again."""
        self._offline.discard(key)

    def __len__(self) -> int:
        return len(self._offline)
