"""The leader's queue of proposed records, appended as batches after a linger.

Rules:

- ``propose`` queues record values; the first one starts the linger
  (``append_linger_ms``, Kafka's controller.quorum.append.linger.ms).
- The queue is appended when the linger is over or it holds ``max_batch_records``
  (a full batch); it is appended as batches of at most ``max_batch_records``.
- A leader that loses its leadership drops the queue (those records never commit).
- The offset of a queued record is known at once: the log end plus its position.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ProposalQueue"]


class ProposalQueue:
    def __init__(self, append_linger_ms: int, max_batch_records: int):
        self._linger_ms = append_linger_ms
        self._max_batch = max_batch_records
        self._records: list[bytes] = []
        self._since_ms = 0

    def __len__(self) -> int:
        return len(self._records)

    def add(self, records: Sequence[bytes], now_ms: int) -> None:
        if not records:
            raise ValueError("propose needs at least one record")
        if not self._records:
            self._since_ms = now_ms
        self._records.extend(bytes(r) for r in records)

    def due_ms(self) -> int:
        """When the queue must be appended (a full batch: now)."""
        if len(self._records) >= self._max_batch:
            return 0
        return self._since_ms + self._linger_ms

    def take_batches(self) -> list[list[bytes]]:
        records, self._records = self._records, []
        step = self._max_batch
        return [records[i:i + step] for i in range(0, len(records), step)]

    def clear(self) -> None:
        self._records.clear()
