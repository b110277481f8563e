"""Producer helpers shared by `tierlog produce` and `tierlog perf produce`.

`send` retries a record the local queue has no room for (BufferError) after
serving delivery reports; `drain` waits for every outstanding delivery
report, bounded by a deadline. Both stop early with the connection's error
when the cluster cannot be reached.
"""

from __future__ import annotations

from typing import Any

from tierlog.cli.connection import Connection
from tierlog.clock import monotonic_s

__all__ = ["drain", "send"]

_QUEUE_FULL_POLL_S = 0.05
_DRAIN_POLL_S = 0.1


def send(conn: Connection, topic: str, **record: Any) -> None:
    """Produce one record, waiting for queue room if librdkafka's queue is full."""
    producer = conn.client
    while True:
        try:
            producer.produce(topic, **record)
            return
        except BufferError:
            producer.poll(_QUEUE_FULL_POLL_S)
            conn.health.check()


def drain(conn: Connection, deadline: float) -> int:
    """Wait for outstanding deliveries; returns how many are still pending."""
    producer = conn.client
    while True:
        pending = producer.flush(_DRAIN_POLL_S)
        conn.health.check()
        if pending == 0 or monotonic_s() >= deadline:
            return pending
