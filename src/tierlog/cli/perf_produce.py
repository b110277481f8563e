"""`tierlog perf produce`, modelled on kafka-producer-perf-test.

Sends ``--num-records`` records of ``--record-size`` bytes (one pre-generated
payload of random upper-case letters, as Kafka's tool does) as fast as
possible or paced to ``--throughput`` records/s. A record's latency is the
time from produce() to its delivery report (librdkafka's message latency).
Throughput counts from the first send until the last acknowledgement.

Records are given ``message.timeout.ms`` = 4 x ``--timeout`` (overridable
with ``--command-config``), which bounds every wait: a record that cannot be
delivered by then is reported as failed, and failures make the exit status 1
after the figures are printed.
"""

from __future__ import annotations

import argparse
import random

from confluent_kafka import KafkaError, Producer

from tierlog.cli.connection import Connection
from tierlog.cli.errors import CliError, describe_kafka_error
from tierlog.cli.perf_progress import LiveProgress
from tierlog.cli.perf_stats import LatencyRecorder, rates
from tierlog.cli.producing import drain, send
from tierlog.cli.render import print_json
from tierlog.clock import monotonic_s

__all__ = ["run_perf_produce"]

_POLL_MASK = 1023  # serve delivery reports every 1024 sends
_MESSAGE_TIMEOUT_FACTOR = 4
_DRAIN_GRACE_S = 5.0
_UNLIMITED = -1


class _Deliveries:
    """Delivery callback: latency of each acknowledged record, failures counted."""

    def __init__(self, expected: int) -> None:
        self.latency = LatencyRecorder(expected)
        self.acked = 0
        self.failed = 0
        self.first_error: KafkaError | None = None

    def __call__(self, error: KafkaError | None, message) -> None:
        self.acked += 1
        if error is not None:
            self.failed += 1
            self.first_error = self.first_error or error
            return
        seconds = message.latency()
        if seconds is not None:
            self.latency.record(seconds * 1000.0)


class _Pacer:
    """Holds sends to a target rate (kafka-producer-perf-test's throttler)."""

    def __init__(self, records_per_s: float, producer: Producer) -> None:
        self._interval_s = 1.0 / records_per_s
        self._producer = producer
        self._start = monotonic_s()

    def pace(self, sent: int) -> None:
        due = self._start + sent * self._interval_s
        now = monotonic_s()
        while now < due:
            self._producer.poll(due - now)  # serves delivery reports while waiting
            now = monotonic_s()


def _payload(size: int) -> bytes:
    rng = random.Random(size)
    return bytes(rng.choices(range(ord("A"), ord("Z") + 1), k=size))


def _settings(args: argparse.Namespace, deliveries: _Deliveries) -> dict:
    settings = {
        "acks": args.acks,
        "compression.type": args.compression,
        "on_delivery": deliveries,
        "message.timeout.ms": max(1000, int(args.timeout * 1000 * _MESSAGE_TIMEOUT_FACTOR)),
    }
    if args.linger_ms is not None:
        settings["linger.ms"] = args.linger_ms
    if args.batch_size is not None:
        settings["batch.size"] = args.batch_size
    return settings


def _send_all(conn: Connection, args: argparse.Namespace, deliveries: _Deliveries,
              progress: LiveProgress) -> None:
    producer, topic, payload = conn.client, args.topic, _payload(args.record_size)
    pacer = _Pacer(args.throughput, producer) if args.throughput > 0 else None
    produce = producer.produce
    for i in range(args.num_records):
        try:
            produce(topic, payload)
        except BufferError:
            send(conn, topic, value=payload)
        if i & _POLL_MASK == 0:
            producer.poll(0)
            conn.health.check()
            progress.update(deliveries.acked)
        if pacer is not None:
            pacer.pace(i + 1)


def _figures(args: argparse.Namespace, deliveries: _Deliveries, elapsed_s: float) -> dict:
    records = deliveries.acked - deliveries.failed
    figures = {"test": "produce", "topic": args.topic, "records": records,
               "failed": deliveries.failed, "record_size": args.record_size,
               "bytes": records * args.record_size}
    figures.update(rates(records, figures["bytes"], elapsed_s))
    figures.update(deliveries.latency.summary())
    figures.update({"acks": args.acks, "compression": args.compression,
                    "linger_ms": args.linger_ms, "batch_size": args.batch_size,
                    "throughput_target": args.throughput})
    return figures


def _summary_line(f: dict) -> str:
    return (
        f"{f['records']} records sent, {f['records_per_sec']:.1f} records/sec "
        f"({f['mb_per_sec']:.2f} MB/sec), {f['latency_avg_ms']:.2f} ms avg latency, "
        f"{f['latency_max_ms']:.2f} ms max latency, {f['latency_p50_ms']:.2f} ms 50th, "
        f"{f['latency_p95_ms']:.2f} ms 95th, {f['latency_p99_ms']:.2f} ms 99th, "
        f"{f['latency_p999_ms']:.2f} ms 99.9th."
    )


def run_perf_produce(args: argparse.Namespace) -> int:
    deliveries = _Deliveries(args.num_records)
    conn = Connection(Producer, args, **_settings(args, deliveries))
    conn.topic_metadata(args.topic)
    with LiveProgress("producing", args.num_records, enabled=not args.json) as progress:
        start = monotonic_s()
        _send_all(conn, args, deliveries, progress)
        wait_s = args.timeout * _MESSAGE_TIMEOUT_FACTOR + _DRAIN_GRACE_S
        pending = drain(conn, monotonic_s() + wait_s)
        elapsed_s = monotonic_s() - start
    figures = _figures(args, deliveries, elapsed_s)
    if args.json:
        print_json(figures)
    else:
        print(_summary_line(figures))
    if deliveries.first_error is not None:
        raise CliError(f"{deliveries.failed} of {args.num_records} records not produced: "
                       f"{describe_kafka_error(deliveries.first_error)}")
    if pending:
        raise conn.timed_out(f"acknowledgement of {pending} records")
    return 0
