"""Where a consumer starts: ``--from earliest|latest|OFFSET|@TIMESTAMP_MS``.

``OFFSET`` is a partition offset (inclusive: that record is the first one
read), so it needs ``--partition`` unless the topic has a single partition.
It must lie between the log start offset and the high watermark (which
waits for the next record); anything else is an error, checked up front.
``@TIMESTAMP_MS`` starts each partition at its first record whose timestamp
is at or after the given time (ListOffsets through ``offsets_for_times``);
a partition with no such record starts at its end.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError

__all__ = ["StartPosition", "assignments", "start_position"]

_NOT_FOUND = -1  # offsets_for_times: no record at or after the timestamp


@dataclass(frozen=True)
class StartPosition:
    kind: str  # "earliest" | "latest" | "offset" | "timestamp"
    value: int = 0

    def __str__(self) -> str:
        return {"offset": str(self.value), "timestamp": f"@{self.value}"}.get(self.kind, self.kind)


def start_position(text: str) -> StartPosition:
    """argparse type for --from."""
    if text in ("earliest", "latest"):
        return StartPosition(text)
    kind, digits = ("timestamp", text[1:]) if text.startswith("@") else ("offset", text)
    if digits.isascii() and digits.isdigit():
        return StartPosition(kind, int(digits))
    raise argparse.ArgumentTypeError(
        f"expected earliest, latest, an offset or @TIMESTAMP_MS, got {text!r}"
    )


def _by_timestamp(conn: Connection, topic: str, partitions: list[int], ms: int) -> list[TopicPartition]:
    wanted = [TopicPartition(topic, p, ms) for p in partitions]
    found = conn.client.offsets_for_times(wanted, timeout=conn.timeout_s)
    for tp in found:
        if tp.error is not None:
            raise KafkaException(tp.error)
    return [TopicPartition(topic, tp.partition, OFFSET_END if tp.offset == _NOT_FOUND else tp.offset)
            for tp in found]


def _by_offset(conn: Connection, topic: str, partitions: list[int], offset: int,
               explicit: bool) -> list[TopicPartition]:
    if len(partitions) > 1 and not explicit:
        raise CliError(f"--from {offset} needs --partition: topic {topic!r} "
                       f"has {len(partitions)} partitions")
    start = TopicPartition(topic, partitions[0], offset)
    low, high = conn.client.get_watermark_offsets(start, timeout=conn.timeout_s)
    if not low <= offset <= high:
        raise CliError(f"offset {offset} is outside partition {partitions[0]} of {topic!r}, "
                       f"which holds offsets {low} to {high} (exclusive)")
    return [start]


def assignments(conn: Connection, topic: str, partition: int | None,
                start: StartPosition) -> list[TopicPartition]:
    """The TopicPartitions, with start offsets, for a consumer to assign()."""
    existing = sorted(conn.topic_metadata(topic).partitions)
    if partition is not None and partition not in existing:
        raise CliError(f"topic {topic!r} has no partition {partition} (it has {len(existing)})")
    partitions = existing if partition is None else [partition]
    if start.kind == "offset":
        return _by_offset(conn, topic, partitions, start.value, partition is not None)
    if start.kind == "timestamp":
        return _by_timestamp(conn, topic, partitions, start.value)
    logical = OFFSET_BEGINNING if start.kind == "earliest" else OFFSET_END
    return [TopicPartition(topic, p, logical) for p in partitions]
