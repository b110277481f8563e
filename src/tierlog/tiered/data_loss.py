"""Remote data loss: segments the metadata lists as finished whose objects are
missing or corrupt in the store.

A broker finds them when it reads one (a consumer's fetch); ``tierlog remote
verify`` finds them without a broker.  ``RemoteDataLoss`` is the broker's
record of them: ``report`` answers True the first time a segment is reported
(the caller logs it once, at ERROR) and counts it; the counters are plain
attributes a metrics exporter can read.

Why consumers get UNKNOWN_SERVER_ERROR for a lost segment (not the retriable
KAFKA_STORAGE_ERROR): it is Kafka's own answer.  Kafka's RemoteLogReader passes
any exception of ``RemoteStorageManager.fetchLogSegment`` (here
``RemoteResourceNotFoundException``, a ``RemoteStorageException``) to
DelayedRemoteFetch, which answers the partition with
``Errors.forException(e)``; no error is mapped to RemoteStorageException, so the
answer is UNKNOWN_SERVER_ERROR.  Clients surface it: librdkafka hands every
Fetch error outside its own retriable set (which holds KAFKA_STORAGE_ERROR and
the leadership errors) to the application as a consumer error and backs off;
kafka-python raises it from ``poll()``; Java's consumer logs a WARN.
OFFSET_OUT_OF_RANGE would be wrong: ``auto.offset.reset`` would skip the data
(latest) or loop on it (earliest) without telling anyone.  The segment stays
unreadable until it is uploaded again or the log start moves past it
(DeleteRecords), which the operator decides.
"""

from __future__ import annotations

import threading
from enum import Enum

__all__ = ["LossKind", "RemoteDataLoss"]


class LossKind(Enum):
    MISSING = "missing"
    CORRUPT = "corrupt"


class RemoteDataLoss:
    """Thread-safe: which lost segments were reported, and how many of each kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reported: set[object] = set()
        self.missing_segments = 0           # distinct segments found with an object missing
        self.corrupt_segments = 0           # distinct segments found with corrupt data

    def report(self, segment_id: object, kind: LossKind) -> bool:
        """Count ``segment_id`` lost; True the first time (then log it), False after."""
        with self._lock:
            if segment_id in self._reported:
                return False
            self._reported.add(segment_id)
            if kind is LossKind.MISSING:
                self.missing_segments += 1
            else:
                self.corrupt_segments += 1
            return True

    @property
    def lost_segments(self) -> int:
        return self.missing_segments + self.corrupt_segments
