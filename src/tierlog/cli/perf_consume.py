"""`tierlog perf consume`, modelled on kafka-consumer-perf-test.

Reads a topic from the earliest offset of every partition with assign() (no
group, so no rebalance time to subtract). Without ``--messages`` it reads up
to the high watermarks seen at the start; with it, until that many records
arrived. Throughput counts from the assignment to the last record. If no
record arrives for ``--timeout`` seconds before the goal, the figures so far
are printed with ``"complete": false`` and the exit status is 1.
"""

from __future__ import annotations

import argparse

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from tierlog.cli.cmd_consume import CONSUMER_SETTINGS
from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_kafka_error
from tierlog.cli.perf_progress import LiveProgress
from tierlog.cli.perf_stats import MB, rates
from tierlog.cli.render import print_json
from tierlog.clock import monotonic_s

__all__ = ["run_perf_consume"]

_BATCH_MAX = 10_000
_POLL_S = 0.1


class _Goal:
    """When to stop: a record count, or every partition's end offset (exclusive)."""

    def __init__(self, messages: int | None, ranges: dict[int, tuple[int, int]]) -> None:
        self.messages = messages
        self.unfinished = {p: end for p, (_, end) in ranges.items() if messages is None}
        self._available = sum(end - start for start, end in ranges.values())

    @property
    def total(self) -> int:
        """Records expected (for the progress bar)."""
        return self._available if self.messages is None else self.messages

    def reached(self, records: int) -> bool:
        if self.messages is not None:
            return records >= self.messages
        return not self.unfinished

    def seen(self, partition: int, offset: int) -> None:
        end = self.unfinished.get(partition)
        if end is not None and offset + 1 >= end:
            del self.unfinished[partition]


class _Counts:
    def __init__(self) -> None:
        self.records = 0
        self.bytes = 0
        self.last_record_at = monotonic_s()


def _offset_ranges(conn: Connection, topic: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
    """(log start, high watermark (exclusive)) of each non-empty partition."""
    ranges = {}
    for partition in partitions:
        low, high = conn.client.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=conn.timeout_s)
        if high > low:
            ranges[partition] = (low, high)
    return ranges


def _take(batch: list, goal: _Goal, counts: _Counts) -> None:
    for message in batch:
        error = message.error()
        if error is not None:
            raise CliError(f"partition {message.partition()}: {describe_kafka_error(error)}")
        value, key = message.value(), message.key()
        counts.bytes += (len(value) if value else 0) + (len(key) if key else 0)
        goal.seen(message.partition(), message.offset())
    counts.records += len(batch)
    if batch:
        counts.last_record_at = monotonic_s()


def _read(conn: Connection, goal: _Goal, progress: LiveProgress, idle_limit_s: float) -> _Counts:
    counts = _Counts()
    while not goal.reached(counts.records):
        wanted = _BATCH_MAX if goal.messages is None else min(_BATCH_MAX, goal.messages - counts.records)
        _take(conn.client.consume(num_messages=wanted, timeout=_POLL_S), goal, counts)
        conn.health.check()
        progress.update(counts.records)
        if monotonic_s() - counts.last_record_at >= idle_limit_s:
            break
    return counts


def _summary_line(f: dict) -> str:
    return (f"{f['records']} records consumed ({f['bytes'] / MB:.2f} MB) in {f['elapsed_s']:.3f} s: "
            f"{f['records_per_sec']:.1f} records/sec ({f['mb_per_sec']:.2f} MB/sec)")


def run_perf_consume(args: argparse.Namespace) -> int:
    conn = Connection(Consumer, args, **CONSUMER_SETTINGS)
    try:
        partitions = sorted(conn.topic_metadata(args.topic).partitions)
        goal = _Goal(args.messages, _offset_ranges(conn, args.topic, partitions))
        conn.client.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in partitions])
        with LiveProgress("consuming", goal.total, enabled=not args.json) as progress:
            start = monotonic_s()
            counts = _read(conn, goal, progress, args.timeout)
    finally:
        conn.client.close()
    figures = {"test": "consume", "topic": args.topic, "records": counts.records,
               "bytes": counts.bytes, "complete": goal.reached(counts.records)}
    figures.update(rates(counts.records, counts.bytes, max(0.0, counts.last_record_at - start)))
    if args.json:
        print_json(figures)
    else:
        print(_summary_line(figures))
    if not figures["complete"]:
        raise CliError(f"no record for {args.timeout:g}s before the goal was reached")
    return 0
